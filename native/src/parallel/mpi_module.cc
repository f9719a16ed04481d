// N-API surface of the MPI binding (`addon.mpi`): the few collectives data-parallel training needs,
// on MPI_COMM_WORLD. MPI is loaded at RUN TIME with dlopen, so the addon loads (and CI builds it)
// on machines without MPI or its headers; `probe()` says what was found and why it cannot run.
//
// ABI: this binding speaks Open MPI's ABI (libmpi.so.40, Open MPI 3.x-5.x; Debian's default MPI).
// Open MPI's handles are pointers to predefined global objects that mpi.h names through
// OMPI_PREDEFINED_GLOBAL: MPI_COMM_WORLD is `&ompi_mpi_comm_world`, MPI_FLOAT `&ompi_mpi_float`,
// MPI_SUM `&ompi_mpi_op_sum`, MPI_ERRORS_ARE_FATAL `&ompi_mpi_errors_are_fatal`, and MPI_IN_PLACE
// is `(void*)1` (openmpi/include/mpi.h, lines ~518 and ~979-1099 in 4.1.4); we resolve those symbols
// with dlsym. MPICH (libmpi.so.12) uses 32-bit integer handles instead (MPI_COMM_WORLD 0x44000000,
// ...); it is detected and refused with a message rather than called with the wrong ABI.
// The prototypes below are copied in shape from the MPI-3.1 standard (section 5 collectives,
// 8.7 startup, 8.3 error handling), with every handle typed as an opaque pointer as Open MPI does.
//
// Calls are synchronous on the JS thread (the step waits for its gradients anyway). A rank that
// dies makes the others fail: MPI_ERRORS_ARE_FATAL is set on MPI_COMM_WORLD so an MPI error aborts
// the job, and mpirun kills the remaining ranks when one exits without MPI_Finalize or on a signal.
#include <dlfcn.h>
#include <napi.h>

#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "napi_args.h"
#include "parallel/dl_loader.h"
#include "parallel/float_buffer.h"
#include "parallel/guard.h"
#include "registry.h"

namespace agentrl::parallel {
namespace {

constexpr char kPrefix[] = "mpi: ";

using Handle = void*;  // MPI_Comm, MPI_Datatype, MPI_Op, MPI_Errhandler in Open MPI's ABI
constexpr int kSuccess = 0;  // MPI_SUCCESS

struct Mpi {
  bool tried = false;
  bool usable = false;
  std::string implementation = "none";  // openmpi | mpich | none
  std::string library;
  std::string detail;
  void* lib = nullptr;
  // functions
  int (*Init_thread)(int*, char***, int, int*) = nullptr;
  int (*Initialized)(int*) = nullptr;
  int (*Finalized)(int*) = nullptr;
  int (*Finalize)() = nullptr;
  int (*Comm_rank)(Handle, int*) = nullptr;
  int (*Comm_size)(Handle, int*) = nullptr;
  int (*Comm_set_errhandler)(Handle, Handle) = nullptr;
  int (*Barrier)(Handle) = nullptr;
  int (*Bcast)(void*, int, Handle, int, Handle) = nullptr;
  int (*Allreduce)(const void*, void*, int, Handle, Handle, Handle) = nullptr;
  int (*Allgather)(const void*, int, Handle, void*, int, Handle, Handle) = nullptr;
  int (*Scatterv)(const void*, const int*, const int*, Handle, void*, int, Handle, int, Handle) = nullptr;
  int (*Abort)(Handle, int) = nullptr;
  int (*Error_string)(int, char*, int*) = nullptr;
  int (*Get_library_version)(char*, int*) = nullptr;
  // predefined handles
  Handle comm_world = nullptr, t_byte = nullptr, t_float = nullptr, t_double = nullptr, op_sum = nullptr,
         errors_are_fatal = nullptr;
  // state of this process
  bool initialized = false;
  bool finalized = false;
  int rank = 0, size = 1;
  int thread_level = 0;  // what MPI_Init_thread provided
};

Mpi& State() {
  static Mpi m;
  return m;
}

Mpi& Load() {
  Mpi& m = State();
  if (m.tried) return m;
  m.tried = true;
  // RTLD_GLOBAL: Open MPI dlopens its own MCA components, which resolve symbols of libmpi /
  // libopen-pal from the global namespace.
  const dl::Opened opened = dl::OpenFirst(
      dl::Candidates("AGENTRL_MPI_LIBRARY", {"libmpi.so.40", "libmpi.so.12", "libmpi.so"}), RTLD_NOW | RTLD_GLOBAL);
  m.lib = opened.handle;
  m.library = opened.name;
  if (m.lib == nullptr) {
    m.detail = "no MPI library found (" + opened.errors +
               "); install Open MPI (apt-get install libopenmpi-dev openmpi-bin) or set AGENTRL_MPI_LIBRARY";
    return m;
  }
  if (dlsym(m.lib, "ompi_mpi_comm_world") == nullptr) {
    m.implementation = dlsym(m.lib, "MPIR_Err_return_comm") || dlsym(m.lib, "MPICH_Calling_convention") ? "mpich"
                                                                                                          : "unknown";
    m.detail = m.library + " is not Open MPI (" + m.implementation +
               "): this binding speaks Open MPI's ABI only (pointer handles such as ompi_mpi_comm_world); install "
               "Open MPI (apt-get install libopenmpi-dev openmpi-bin) or point AGENTRL_MPI_LIBRARY at libmpi.so.40";
    return m;
  }
  m.implementation = "openmpi";
  dl::Symbols sym(m.lib);
  sym(m.Init_thread, "MPI_Init_thread")(m.Initialized, "MPI_Initialized")(m.Finalized, "MPI_Finalized");
  sym(m.Finalize, "MPI_Finalize")(m.Comm_rank, "MPI_Comm_rank")(m.Comm_size, "MPI_Comm_size");
  sym(m.Comm_set_errhandler, "MPI_Comm_set_errhandler")(m.Barrier, "MPI_Barrier")(m.Bcast, "MPI_Bcast");
  sym(m.Allreduce, "MPI_Allreduce")(m.Allgather, "MPI_Allgather")(m.Abort, "MPI_Abort");
  sym(m.Scatterv, "MPI_Scatterv");
  sym(m.Error_string, "MPI_Error_string")(m.Get_library_version, "MPI_Get_library_version");
  // predefined handles: Open MPI's global objects that mpi.h's MPI_COMM_WORLD, MPI_FLOAT, ... point at
  sym(m.comm_world, "ompi_mpi_comm_world")(m.t_byte, "ompi_mpi_byte")(m.t_float, "ompi_mpi_float");
  sym(m.t_double, "ompi_mpi_double")(m.op_sum, "ompi_mpi_op_sum")(m.errors_are_fatal, "ompi_mpi_errors_are_fatal");
  if (!sym.Complete()) {
    m.detail = m.library + " lacks " + sym.Missing();
    return m;
  }
  char version[8192] = {0};  // MPI_MAX_LIBRARY_VERSION_STRING is 256 in Open MPI; be generous
  int len = 0;
  if (m.Get_library_version(version, &len) == kSuccess) {
    std::string v(version, static_cast<size_t>(len > 0 ? len : 0));
    auto nl = v.find_first_of("\n,");
    m.detail = nl == std::string::npos ? v : v.substr(0, nl);
  }
  m.usable = true;
  return m;
}

void Check(Mpi& m, int rc, const char* what) {
  if (rc == kSuccess) return;
  char msg[1024] = {0};
  int len = 0;
  std::string text = m.Error_string && m.Error_string(rc, msg, &len) == kSuccess ? std::string(msg, len)
                                                                                 : "error " + std::to_string(rc);
  throw std::runtime_error(std::string(what) + " failed: " + text);
}

void DrainAsync();

Mpi& ReadyNoDrain(const char* what) {
  Mpi& m = Load();
  if (!m.usable) throw Unavailable(std::string(what) + ": MPI is not available: " + m.detail);
  if (m.finalized) throw Unavailable(std::string(what) + ": MPI was finalized in this process");
  if (!m.initialized) throw Unavailable(std::string(what) + ": call mpi.init() first");
  return m;
}

// Every blocking collective first waits for the comm thread's buckets: MPI_THREAD_SERIALIZED
// holds (one thread in MPI at a time) and collectives keep the same order on every rank.
Mpi& Ready(const char* what) {
  Mpi& m = ReadyNoDrain(what);
  DrainAsync();
  return m;
}

// MPI counts are C ints: larger buffers go in slices of this many elements.
constexpr int64_t kChunk = int64_t{1} << 30;

Napi::Value Probe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Mpi& m = Load();
  Napi::Object o = Napi::Object::New(env);
  o.Set("available", m.usable);
  o.Set("implementation", m.implementation);
  o.Set("library", m.library);
  o.Set("detail", m.detail);
  o.Set("initialized", m.initialized);
  o.Set("finalized", m.finalized);
  return o;
}

Napi::Value Init(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int required = static_cast<int>(args::IntegerIn<BadArgument>(info[0], "threadLevel", 0, 3));
  Mpi& m = Load();
  if (!m.usable) throw Unavailable("init: MPI is not available: " + m.detail);
  if (m.finalized) throw Unavailable("init: MPI was finalized in this process and cannot be initialised again");
  int provided = required;
  if (!m.initialized) {
    int already = 0;
    Check(m, m.Initialized(&already), "MPI_Initialized");
    if (!already) Check(m, m.Init_thread(nullptr, nullptr, required, &provided), "MPI_Init_thread");
    Check(m, m.Comm_set_errhandler(m.comm_world, m.errors_are_fatal), "MPI_Comm_set_errhandler");
    Check(m, m.Comm_rank(m.comm_world, &m.rank), "MPI_Comm_rank");
    Check(m, m.Comm_size(m.comm_world, &m.size), "MPI_Comm_size");
    m.initialized = true;
    m.thread_level = provided;
  }
  Napi::Object o = Napi::Object::New(env);
  o.Set("rank", m.rank);
  o.Set("size", m.size);
  o.Set("threadLevel", provided);
  o.Set("library", m.detail);
  return o;
}

Napi::Value Barrier(const Napi::CallbackInfo& info) {
  Mpi& m = Ready("barrier");
  Check(m, m.Barrier(m.comm_world), "MPI_Barrier");
  return info.Env().Undefined();
}

int Root(Mpi& m, const Napi::Value& v) {
  return static_cast<int>(args::IntegerIn<BadArgument>(v, "root", 0, m.size - 1));
}

Napi::Value Broadcast(const Napi::CallbackInfo& info) {
  Mpi& m = Ready("broadcast");
  auto buf = args::Typed<BadArgument, uint8_t>(info[0], "buffer");
  const int root = Root(m, info[1]);
  uint8_t* p = buf.Data();
  const int64_t n = static_cast<int64_t>(buf.ElementLength());
  for (int64_t off = 0; off < n; off += kChunk) {
    const int count = static_cast<int>(std::min(kChunk, n - off));
    Check(m, m.Bcast(p + off, count, m.t_byte, root, m.comm_world), "MPI_Bcast");
  }
  return info.Env().Undefined();
}

template <typename T>
void AllreduceSum(Mpi& m, T* p, int64_t n, Handle type) {
  for (int64_t off = 0; off < n; off += kChunk) {
    const int count = static_cast<int>(std::min(kChunk, n - off));
    Check(m, m.Allreduce(reinterpret_cast<void*>(1) /* MPI_IN_PLACE */, p + off, count, type, m.op_sum, m.comm_world),
          "MPI_Allreduce");
  }
}

Napi::Value AllreduceSumInPlace(const Napi::CallbackInfo& info) {
  Mpi& m = Ready("allreduceSum");
  const FloatBuffer b = FloatArg(info[0], "buffer");
  const auto n = static_cast<int64_t>(b.count);
  if (b.f64) {
    AllreduceSum(m, static_cast<double*>(b.data), n, m.t_double);
  } else {
    AllreduceSum(m, static_cast<float*>(b.data), n, m.t_float);
  }
  return info.Env().Undefined();
}

// Every rank sends `send` (the same length on all ranks); `recv` gets them in rank order.
Napi::Value Allgather(const Napi::CallbackInfo& info) {
  Mpi& m = Ready("allgather");
  auto send = args::Typed<BadArgument, uint8_t>(info[0], "send");
  const int64_t n = static_cast<int64_t>(send.ElementLength());
  if (n * m.size > std::numeric_limits<int32_t>::max()) {
    throw BadArgument("allgather is for small buffers: " + std::to_string(n) + " bytes x " + std::to_string(m.size) +
                      " ranks exceeds 2^31-1 bytes");
  }
  auto recv = args::Typed<BadArgument, uint8_t>(info[1], "recv", n * m.size);
  if (n > 0) {
    Check(m, m.Allgather(send.Data(), static_cast<int>(n), m.t_byte, recv.Data(), static_cast<int>(n), m.t_byte,
                         m.comm_world),
          "MPI_Allgather");
  }
  return info.Env().Undefined();
}

// Root's `send` is cut into `counts[r]` bytes per rank r, in rank order; rank r receives its part in
// `recv` (counts[r] bytes). `counts` (one per rank) must be the same on every rank.
Napi::Value Scatterv(const Napi::CallbackInfo& info) {
  Mpi& m = Ready("scatterv");
  auto send = args::Typed<BadArgument, uint8_t>(info[0], "send");
  auto counts = args::Typed<BadArgument, int32_t>(info[1], "counts", m.size);
  const int root = Root(m, info[3]);
  std::vector<int> displs(static_cast<size_t>(m.size));
  int64_t total = 0;
  for (int r = 0; r < m.size; ++r) {
    if (counts.Data()[r] < 0) throw BadArgument("counts[" + std::to_string(r) + "] is negative");
    displs[static_cast<size_t>(r)] = static_cast<int>(total);
    total += counts.Data()[r];
    if (total > std::numeric_limits<int32_t>::max()) {
      throw BadArgument("scatterv sends at most 2^31-1 bytes in all; split the payload");
    }
  }
  auto recv = args::Typed<BadArgument, uint8_t>(info[2], "recv", counts.Data()[m.rank]);
  if (m.rank == root && static_cast<int64_t>(send.ElementLength()) != total) {
    throw BadArgument("send has " + std::to_string(send.ElementLength()) + " bytes on the root, counts add up to " +
                      std::to_string(total));
  }
  Check(m,
        m.Scatterv(send.Data(), counts.Data(), displs.data(), m.t_byte, recv.Data(), counts.Data()[m.rank], m.t_byte,
                   root, m.comm_world),
        "MPI_Scatterv");
  return info.Env().Undefined();
}

// ---- nonblocking float64 all-reduce on a comm thread ---------------------------------------------
// MPI_Iallreduce alone would not overlap here: Open MPI progresses a nonblocking collective only
// inside MPI calls ("OMPI progress: no"), and the JS thread is busy in the backward. A comm thread
// running the blocking MPI_Allreduce of each queued bucket in turn does progress it, while the JS
// thread computes. It needs MPI_THREAD_SERIALIZED; every blocking collective waits for the queue first.
struct AsyncJob {
  double* data;
  int64_t count;
  int64_t id;
};

struct Async {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<AsyncJob> queue;
  int64_t next_id = 1, done_id = 0;  // jobs complete in id order
  std::string error;                 // the first failure, reported by wait()
  bool stop = false;
  std::thread thread;
  // JS thread only: keeps each in-flight buffer alive until its wait()
  std::unordered_map<int64_t, Napi::Reference<Napi::Float64Array>> buffers;
};

Async& AsyncState() {
  static Async* a = new Async();  // never destroyed: a comm thread may still wait on it at exit
  return *a;
}

void AsyncLoop(Async* a) {
  Mpi& m = State();
  for (;;) {
    AsyncJob job{};
    {
      std::unique_lock<std::mutex> lock(a->mu);
      a->cv.wait(lock, [a] { return a->stop || !a->queue.empty(); });
      if (a->queue.empty()) return;
      job = a->queue.front();
      a->queue.erase(a->queue.begin());
    }
    std::string error;
    try {
      AllreduceSum(m, job.data, job.count, m.t_double);
    } catch (const std::exception& e) {
      error = e.what();
    }
    {
      std::lock_guard<std::mutex> lock(a->mu);
      if (!error.empty() && a->error.empty()) a->error = error;
      a->done_id = job.id;
    }
    a->cv.notify_all();
  }
}

void WaitFor(Async& a, int64_t id) {
  std::unique_lock<std::mutex> lock(a.mu);
  a.cv.wait(lock, [&a, id] { return a.done_id >= id; });
}

void DrainAsync() {
  Async& a = AsyncState();
  WaitFor(a, a.next_id - 1);
  a.buffers.clear();
  std::lock_guard<std::mutex> lock(a.mu);
  if (!a.error.empty()) {
    std::string e = std::move(a.error);
    a.error.clear();
    throw std::runtime_error("a nonblocking all-reduce failed: " + e);
  }
}

void StopAsync() {
  Async& a = AsyncState();
  if (!a.thread.joinable()) return;
  WaitFor(a, a.next_id - 1);
  {
    std::lock_guard<std::mutex> lock(a.mu);
    a.stop = true;
  }
  a.cv.notify_all();
  a.thread.join();
  a.buffers.clear();
}

// Queues an in-place float64 sum over ranks of `buffer` and returns its ticket for wait(). Every rank
// must queue the same buckets in the same order. JS must not touch the buffer before wait().
Napi::Value AllreduceSumAsync(const Napi::CallbackInfo& info) {
  Mpi& m = ReadyNoDrain("allreduceSumAsync");
  if (m.thread_level < 2) {
    throw Unavailable("allreduceSumAsync needs MPI_THREAD_SERIALIZED (init with threadLevel >= 2); this MPI "
                      "provided level " + std::to_string(m.thread_level));
  }
  auto buf = args::Typed<BadArgument, double>(info[0], "buffer");
  Async& a = AsyncState();
  if (!a.thread.joinable()) a.thread = std::thread(AsyncLoop, &a);
  int64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(a.mu);
    id = a.next_id++;
    a.queue.push_back({buf.Data(), static_cast<int64_t>(buf.ElementLength()), id});
  }
  a.buffers.emplace(id, Napi::Persistent(buf));
  a.cv.notify_all();
  return Napi::Number::New(info.Env(), static_cast<double>(id));
}

// Blocks until ticket `id` (and every earlier one) is reduced; rethrows a failure of the comm thread.
Napi::Value Wait(const Napi::CallbackInfo& info) {
  ReadyNoDrain("wait");
  Async& a = AsyncState();
  const int64_t id = args::IntegerIn<BadArgument>(info[0], "ticket", 1, a.next_id - 1);
  WaitFor(a, id);
  for (auto it = a.buffers.begin(); it != a.buffers.end();) it = it->first <= id ? a.buffers.erase(it) : ++it;
  std::lock_guard<std::mutex> lock(a.mu);
  if (!a.error.empty()) {
    std::string e = std::move(a.error);
    a.error.clear();
    throw std::runtime_error("a nonblocking all-reduce failed: " + e);
  }
  return info.Env().Undefined();
}

Napi::Value Abort(const Napi::CallbackInfo& info) {
  const int code = static_cast<int>(args::IntegerIn<BadArgument>(info[0], "code", 0, 255));
  Mpi& m = ReadyNoDrain("abort");  // a rank that aborts does not wait for its buckets
  m.Abort(m.comm_world, code);  // does not return when MPI is up
  std::_Exit(code);
}

Napi::Value Finalize(const Napi::CallbackInfo& info) {
  Mpi& m = Load();
  if (m.usable && m.initialized && !m.finalized) {
    StopAsync();
    m.finalized = true;
    Check(m, m.Finalize(), "MPI_Finalize");
  }
  return info.Env().Undefined();
}

void InitMpi(Napi::Env env, Napi::Object exports) {
  exports.Set("probe", Napi::Function::New(env, Guard<kPrefix, Probe>, "probe"));
  exports.Set("init", Napi::Function::New(env, Guard<kPrefix, Init>, "init"));
  exports.Set("barrier", Napi::Function::New(env, Guard<kPrefix, Barrier>, "barrier"));
  exports.Set("broadcast", Napi::Function::New(env, Guard<kPrefix, Broadcast>, "broadcast"));
  exports.Set("allreduceSum", Napi::Function::New(env, Guard<kPrefix, AllreduceSumInPlace>, "allreduceSum"));
  exports.Set("allgather", Napi::Function::New(env, Guard<kPrefix, Allgather>, "allgather"));
  exports.Set("scatterv", Napi::Function::New(env, Guard<kPrefix, Scatterv>, "scatterv"));
  exports.Set("allreduceSumAsync", Napi::Function::New(env, Guard<kPrefix, AllreduceSumAsync>, "allreduceSumAsync"));
  exports.Set("wait", Napi::Function::New(env, Guard<kPrefix, Wait>, "wait"));
  exports.Set("abort", Napi::Function::New(env, Guard<kPrefix, Abort>, "abort"));
  exports.Set("finalize", Napi::Function::New(env, Guard<kPrefix, Finalize>, "finalize"));
}

}  // namespace

AGENTRL_REGISTER_MODULE(mpi, InitMpi);

}  // namespace agentrl::parallel
