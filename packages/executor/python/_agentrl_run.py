"""Runs one request's code in a clean __main__ the way `python -c` would, then exits the process."""

import ast
import builtins
import os
import sys
import traceback


def run_user_code(req, pythonpath=()):
    """Executes the request in a clean __main__, the way `python -c` would, then exits.

    sys.stdin/stdout/stderr are the server's own (empty) wrappers: fds 0-2 now point at this call's
    stdin memfd and output pipes, and reusing the wrappers saves work on every call. `pythonpath` entries
    go where PYTHONPATH would put them (before the standard library), and into PYTHONPATH for subprocesses.

    Nothing is reported to the server from here: it reads how the call ended from the exit status and the
    output (a MemoryError ends with that traceback on stderr and exit code 1, as under `python -c`).
    """
    sys.argv = ["-c"]
    os.environ.clear()
    os.environ.update({"HOME": "/tmp", "TMPDIR": "/tmp", "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"})
    if pythonpath:
        sys.path[0:0] = list(pythonpath)
        os.environ["PYTHONPATH"] = os.pathsep.join(pythonpath)
    os.chdir("/tmp")
    main = type(sys)("__main__")
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main
    code = 0
    try:
        last = None
        if req.get("lastExpression"):
            tree = ast.parse(req["code"], "<string>", "exec")
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            compiled = compile(tree, "<string>", "exec")
        else:
            compiled = compile(req["code"], "<string>", "exec")
        exec(compiled, main.__dict__)
        if last is not None:
            value = eval(compile(last, "<string>", "eval"), main.__dict__)
            if value is not None:
                print(repr(value))
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code & 0xFF
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except MemoryError:
        code = 1
        try:
            print_user_traceback()
        except MemoryError:
            os.write(2, b"MemoryError\n")
    except BaseException:
        print_user_traceback()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    os._exit(code)


def print_user_traceback():
    """The traceback as `python -c` prints it: without this file's frame."""
    kind, value, tb = sys.exc_info()
    traceback.print_exception(kind, value, tb.tb_next if tb is not None else None)
