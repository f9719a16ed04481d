// N-API surface of NCCL / RCCL (`addon.nccl`): probe, unique id, communicator init, all-reduce
// (sum) and broadcast, destroy. Loaded at RUN TIME with dlopen like the GPU objects, so CI builds
// it without NCCL headers and the addon loads where there is no GPU. The unique id travels over MPI
// (@agentrl/parallel's createNcclCommunicator broadcasts it from rank 0).
//
// Prototypes and constants declared here come from nccl.h (NCCL 2.x, src/nccl.h.in), which RCCL
// keeps API- and value-compatible: ncclResult_t is an int enum with ncclSuccess = 0; ncclUniqueId
// is `struct { char internal[NCCL_UNIQUE_ID_BYTES]; }` with NCCL_UNIQUE_ID_BYTES = 128 and is passed
// BY VALUE to ncclCommInitRank; ncclComm_t is an opaque pointer; ncclDataType_t: ncclUint8 = 1,
// ncclFloat32 = 7, ncclFloat64 = 8; ncclRedOp_t: ncclSum = 0; the stream is a cudaStream_t /
// hipStream_t (nullptr = the default stream).
//
// Buffers: this binding stages host typed arrays through device memory (cudaMalloc / hipMalloc from
// the runtime library, dlopen'ed too: libcudart.so.13 / .12 or libamdhip64.so), which is what a
// world-size-1 check on a GPU machine needs. The GPU engine's gradients do not come through here:
// NcclDeviceOf (nccl_device.h) hands this library's ncclAllReduce and the communicator to the
// engine's device object, which reduces its device buffers bucket by bucket on a side stream
// (engine/cuda/device_model.cu). Nothing here has run on a GPU yet.
#include <dlfcn.h>
#include <napi.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "napi_args.h"
#include "parallel/dl_loader.h"
#include "parallel/float_buffer.h"
#include "parallel/guard.h"
#include "parallel/nccl_device.h"
#include "registry.h"

namespace agentrl::parallel {
namespace {

constexpr char kPrefix[] = "nccl: ";

constexpr int kUniqueIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES
struct NcclUniqueId {
  char internal[kUniqueIdBytes];
};
using NcclComm = void*;
constexpr int kUint8 = 1, kFloat32 = 7, kFloat64 = 8;  // ncclDataType_t
constexpr int kSum = 0;                               // ncclRedOp_t
constexpr int kHostToDevice = 1, kDeviceToHost = 2;   // cudaMemcpyKind / hipMemcpyKind

struct Nccl {
  bool tried = false;
  bool usable = false;
  std::string implementation = "none";  // nccl | rccl | none
  std::string library, runtime, detail;
  int version = 0;
  void* lib = nullptr;
  void* rt = nullptr;
  int (*GetVersion)(int*) = nullptr;
  int (*GetUniqueId)(NcclUniqueId*) = nullptr;
  int (*CommInitRank)(NcclComm*, int, NcclUniqueId, int) = nullptr;
  int (*AllReduce)(const void*, void*, size_t, int, int, NcclComm, void*) = nullptr;
  int (*Broadcast)(const void*, void*, size_t, int, int, NcclComm, void*) = nullptr;
  int (*CommDestroy)(NcclComm) = nullptr;
  const char* (*GetErrorString)(int) = nullptr;
  // runtime (CUDA or HIP): same shapes
  int (*SetDevice)(int) = nullptr;
  int (*GetDeviceCount)(int*) = nullptr;
  int (*Malloc)(void**, size_t) = nullptr;
  int (*Free)(void*) = nullptr;
  int (*Memcpy)(void*, const void*, size_t, int) = nullptr;
  int (*DeviceSynchronize)() = nullptr;
};

Nccl& Load() {
  static Nccl n;
  if (n.tried) return n;
  n.tried = true;
  const dl::Opened opened =
      dl::OpenFirst(dl::Candidates("AGENTRL_NCCL_LIBRARY", {"libnccl.so.2", "librccl.so.1"}), RTLD_NOW | RTLD_LOCAL);
  if (opened.handle == nullptr) {
    n.detail = "not available: no NCCL/RCCL library (" + opened.errors +
               "); install NCCL (libnccl2) or RCCL (librccl1) on a GPU machine, or set AGENTRL_NCCL_LIBRARY";
    return n;
  }
  n.lib = opened.handle;
  n.library = opened.name;
  n.implementation = n.library.find("rccl") != std::string::npos ? "rccl" : "nccl";
  dl::Symbols sym(n.lib);
  sym(n.GetVersion, "ncclGetVersion")(n.GetUniqueId, "ncclGetUniqueId")(n.CommInitRank, "ncclCommInitRank");
  sym(n.AllReduce, "ncclAllReduce")(n.Broadcast, "ncclBroadcast")(n.CommDestroy, "ncclCommDestroy");
  sym(n.GetErrorString, "ncclGetErrorString");
  const bool hip = n.implementation == "rccl";
  const std::vector<std::string> runtimes =
      hip ? std::vector<std::string>{"libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"}
          : std::vector<std::string>{"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"};
  const dl::Opened rt = dl::OpenFirst(runtimes, RTLD_NOW | RTLD_LOCAL);
  n.rt = rt.handle;
  n.runtime = rt.name;
  if (n.rt == nullptr) {
    n.detail = "not available: " + n.library + " loaded but no " + (hip ? "HIP" : "CUDA") + " runtime library (" +
               runtimes.front() + ")";
    return n;
  }
  // The CUDA and HIP runtimes name the same functions cudaX / hipX, with the same shapes.
  const std::string p = hip ? "hip" : "cuda";
  sym.From(n.rt)(n.SetDevice, p + "SetDevice")(n.GetDeviceCount, p + "GetDeviceCount")(n.Malloc, p + "Malloc");
  sym(n.Free, p + "Free")(n.Memcpy, p + "Memcpy")(n.DeviceSynchronize, p + "DeviceSynchronize");
  if (!sym.Complete()) {
    n.detail = "not available: missing symbols " + sym.Missing();
    return n;
  }
  int devices = 0;
  if (n.GetDeviceCount(&devices) != 0 || devices <= 0) {
    n.detail = "not available: " + n.library + " loaded but no usable GPU (" + n.runtime + " reports none)";
    return n;
  }
  n.GetVersion(&n.version);
  n.detail = n.implementation + " " + std::to_string(n.version) + " via " + n.library + ", " + std::to_string(devices) +
             " device(s)";
  n.usable = true;
  return n;
}

void Check(Nccl& n, int rc, const char* what) {
  if (rc == 0) return;
  throw std::runtime_error(std::string(what) + " failed: " + (n.GetErrorString ? n.GetErrorString(rc) : "error") +
                           " (" + std::to_string(rc) + ")");
}
void CheckRt(int rc, const char* what) {
  if (rc != 0) throw std::runtime_error(std::string(what) + " failed with runtime error " + std::to_string(rc));
}

Nccl& Ready(const char* what) {
  Nccl& n = Load();
  if (!n.usable) throw Unavailable(std::string(what) + ": NCCL/RCCL is " + n.detail);
  return n;
}

struct CommHandle {
  NcclComm comm = nullptr;
  int rank = 0, size = 1, device = 0;
};
constexpr napi_type_tag kCommTag = {0x6167656e74726c4eULL, 0x51a7c0de2b4e9f03ULL};

CommHandle& GetComm(const Napi::Value& v) {
  if (!v.IsExternal()) throw BadArgument("expected an NCCL communicator handle, got a non-handle value");
  bool ok = false;
  if (napi_check_object_type_tag(v.Env(), v, &kCommTag, &ok) != napi_ok || !ok) {
    throw BadArgument("expected an NCCL communicator handle, got another kind of handle");
  }
  CommHandle& h = *v.As<Napi::External<CommHandle>>().Data();
  if (h.comm == nullptr) throw BadArgument("the NCCL communicator was destroyed");
  return h;
}

Napi::Value Probe(const Napi::CallbackInfo& info) {
  Nccl& n = Load();
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("available", n.usable);
  o.Set("implementation", n.implementation);
  o.Set("library", n.library);
  o.Set("version", n.version);
  o.Set("detail", n.detail);
  return o;
}

Napi::Value UniqueId(const Napi::CallbackInfo& info) {
  Nccl& n = Ready("uniqueId");
  auto out = Napi::Uint8Array::New(info.Env(), kUniqueIdBytes);
  NcclUniqueId id{};
  Check(n, n.GetUniqueId(&id), "ncclGetUniqueId");
  std::memcpy(out.Data(), id.internal, kUniqueIdBytes);
  return out;
}

Napi::Value InitRank(const Napi::CallbackInfo& info) {
  auto idBytes = args::Typed<BadArgument, uint8_t>(info[0], "uniqueId", kUniqueIdBytes);
  const int size = static_cast<int>(args::IntegerIn<BadArgument>(info[1], "nranks", 1, 1 << 20));
  const int rank = static_cast<int>(args::IntegerIn<BadArgument>(info[2], "rank", 0, size - 1));
  const int device = static_cast<int>(args::IntegerIn<BadArgument>(info[3], "device", 0, 1023));
  Nccl& n = Ready("initRank");
  CheckRt(n.SetDevice(device), "SetDevice");
  NcclUniqueId id{};
  std::memcpy(id.internal, idBytes.Data(), kUniqueIdBytes);
  auto* h = new CommHandle{nullptr, rank, size, device};
  const int rc = n.CommInitRank(&h->comm, size, id, rank);
  if (rc != 0) {
    delete h;
    Check(n, rc, "ncclCommInitRank");
  }
  auto ext = Napi::External<CommHandle>::New(info.Env(), h, [](Napi::Env, CommHandle* p) {
    // A communicator still alive at GC is destroyed then; destroy() is the orderly way.
    if (p->comm != nullptr && Load().usable) Load().CommDestroy(p->comm);
    delete p;
  });
  napi_type_tag_object(info.Env(), ext, &kCommTag);
  return ext;
}

// Stages `bytes` of host memory through the device, runs `op` on the device pointer, copies back.
template <typename Op>
void Staged(Nccl& n, CommHandle& h, void* host, size_t bytes, Op op) {
  if (bytes == 0) return;
  CheckRt(n.SetDevice(h.device), "SetDevice");
  void* dev = nullptr;
  CheckRt(n.Malloc(&dev, bytes), "Malloc");
  try {
    CheckRt(n.Memcpy(dev, host, bytes, kHostToDevice), "Memcpy H2D");
    op(dev);
    CheckRt(n.DeviceSynchronize(), "DeviceSynchronize");
    CheckRt(n.Memcpy(host, dev, bytes, kDeviceToHost), "Memcpy D2H");
  } catch (...) {
    n.Free(dev);
    throw;
  }
  n.Free(dev);
}

Napi::Value AllreduceSum(const Napi::CallbackInfo& info) {
  CommHandle& h = GetComm(info[0]);
  Nccl& n = Ready("allreduceSum");
  const FloatBuffer b = FloatArg(info[1], "buffer");
  Staged(n, h, b.data, b.count * (b.f64 ? 8 : 4), [&](void* dev) {
    Check(n, n.AllReduce(dev, dev, b.count, b.f64 ? kFloat64 : kFloat32, kSum, h.comm, nullptr), "ncclAllReduce");
  });
  return info.Env().Undefined();
}

Napi::Value Broadcast(const Napi::CallbackInfo& info) {
  CommHandle& h = GetComm(info[0]);
  auto buf = args::Typed<BadArgument, uint8_t>(info[1], "buffer");
  const int root = static_cast<int>(args::IntegerIn<BadArgument>(info[2], "root", 0, h.size - 1));
  Nccl& n = Ready("broadcast");
  Staged(n, h, buf.Data(), buf.ElementLength(), [&](void* dev) {
    Check(n, n.Broadcast(dev, dev, buf.ElementLength(), kUint8, root, h.comm, nullptr), "ncclBroadcast");
  });
  return info.Env().Undefined();
}

Napi::Value Destroy(const Napi::CallbackInfo& info) {
  CommHandle& h = GetComm(info[0]);
  Nccl& n = Ready("destroy");
  NcclComm c = h.comm;
  h.comm = nullptr;
  Check(n, n.CommDestroy(c), "ncclCommDestroy");
  return info.Env().Undefined();
}

void InitNccl(Napi::Env env, Napi::Object exports) {
  exports.Set("probe", Napi::Function::New(env, Guard<kPrefix, Probe>, "probe"));
  exports.Set("uniqueId", Napi::Function::New(env, Guard<kPrefix, UniqueId>, "uniqueId"));
  exports.Set("initRank", Napi::Function::New(env, Guard<kPrefix, InitRank>, "initRank"));
  exports.Set("allreduceSum", Napi::Function::New(env, Guard<kPrefix, AllreduceSum>, "allreduceSum"));
  exports.Set("broadcast", Napi::Function::New(env, Guard<kPrefix, Broadcast>, "broadcast"));
  exports.Set("destroy", Napi::Function::New(env, Guard<kPrefix, Destroy>, "destroy"));
}

}  // namespace

NcclDeviceComm NcclDeviceOf(const Napi::Value& handle) {
  CommHandle& h = GetComm(handle);
  Nccl& n = Ready("device all-reduce");
  return {reinterpret_cast<void*>(n.AllReduce), h.comm, h.device};
}

AGENTRL_REGISTER_MODULE(nccl, InitNccl);

}  // namespace agentrl::parallel
