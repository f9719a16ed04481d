// The C ABI every GPU shared object exports; the addon dlopens the object and looks these up.
#pragma once

extern "C" {
/** Device count (>= 0), or a negative number when the runtime cannot start; `msg` gets a device name or why not. */
typedef int (*agentrl_gpu_probe_fn)(char* msg, int msg_len);
}
