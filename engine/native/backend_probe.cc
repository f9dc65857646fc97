#include "backend_probe.h"

#include <MNN/expr/Executor.hpp>
#include <MNN/expr/ExecutorScope.hpp>
#include <MNN/expr/MathOp.hpp>
#include <MNN/expr/NeuralNetWorkOp.hpp>
#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>

#include "backends.h"
#include "common.h"

// MNN keeps its runtime-creator registry internal; these two functions are exported (MNN_PUBLIC in
// source/core/Backend.hpp) and are all we need. MNNGetExtraRuntimeCreator returns nullptr both when a backend is
// not compiled in and when its checked creator cannot start a runtime here (OpenCL without a GPU device), so it
// cannot tell the two apart on its own.
namespace MNN {
class RuntimeCreator;
const RuntimeCreator* MNNGetExtraRuntimeCreator(MNNForwardType type);
bool MNNInsertExtraRuntimeCreator(MNNForwardType type, const RuntimeCreator* creator, bool needCheck);
}  // namespace MNN

namespace mnn_edge {

namespace {

ProbeStep Ok(const std::string& step, const std::string& detail) { return {step, "ok", detail}; }
ProbeStep Fail(const std::string& step, const std::string& detail) { return {step, "fail", detail}; }

// ---------------------------------------------------------------------------------------------- loaders
// The exact names MNN's wrappers dlopen on Linux (vulkan_wrapper.cpp, OpenCLWrapper.cpp): a board that has only
// the versioned libvulkan.so.1 / libOpenCL.so.1 fails here although vulkaninfo/clinfo work.
const std::vector<std::string>& LoaderNames(MNNForwardType type) {
  static const std::vector<std::string> vulkan = {"libvulkan.so"};
  static const std::vector<std::string> opencl = {"/usr/lib/libOpenCL.so",   "/usr/local/lib/libOpenCL.so",
                                                  "/usr/local/lib/libpocl.so", "/usr/lib64/libOpenCL.so",
                                                  "/usr/lib32/libOpenCL.so", "libOpenCL.so"};
  static const std::vector<std::string> none;
  if (type == MNN_FORWARD_VULKAN) return vulkan;
  if (type == MNN_FORWARD_OPENCL) return opencl;
  return none;
}

struct Loaded {
  void* handle = nullptr;
  std::string name;
  std::string error;
};

Loaded OpenLoader(MNNForwardType type) {
  Loaded l;
  for (const auto& n : LoaderNames(type)) {
    void* h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h != nullptr) {
      l.handle = h;
      l.name = n;
      return l;
    }
    const char* e = dlerror();
    l.error = e != nullptr ? e : "dlopen failed";
  }
  return l;
}

std::string Versioned(MNNForwardType type) {
  const char* name = type == MNN_FORWARD_VULKAN ? "libvulkan.so.1" : "libOpenCL.so.1";
  void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return "";
  dlclose(h);
  return name;
}

// ---------------------------------------------------------------------------------------------- Vulkan
// Only what enumerating physical devices needs, laid out as the Vulkan ABI defines it (no SDK headers needed).
struct VkAppInfo {
  uint32_t sType;  // VK_STRUCTURE_TYPE_APPLICATION_INFO = 0
  const void* pNext;
  const char* pApplicationName;
  uint32_t applicationVersion;
  const char* pEngineName;
  uint32_t engineVersion;
  uint32_t apiVersion;
};
struct VkInstanceInfo {
  uint32_t sType;  // VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO = 1
  const void* pNext;
  uint32_t flags;
  const VkAppInfo* pApplicationInfo;
  uint32_t enabledLayerCount;
  const char* const* ppEnabledLayerNames;
  uint32_t enabledExtensionCount;
  const char* const* ppEnabledExtensionNames;
};
using PfnCreateInstance = int32_t (*)(const VkInstanceInfo*, const void*, void**);
using PfnDestroyInstance = void (*)(void*, const void*);
using PfnEnumerateDevices = int32_t (*)(void*, uint32_t*, void**);
using PfnDeviceProperties = void (*)(void*, void*);

const char* VkTypeName(int32_t t) {
  switch (t) {
    case 1: return "integrated GPU";
    case 2: return "discrete GPU";
    case 3: return "virtual GPU";
    case 4: return "CPU";
    default: return "other";
  }
}

ProbeStep VulkanDevices(void* lib, std::string* kind) {
  auto create = reinterpret_cast<PfnCreateInstance>(dlsym(lib, "vkCreateInstance"));
  auto destroy = reinterpret_cast<PfnDestroyInstance>(dlsym(lib, "vkDestroyInstance"));
  auto enumerate = reinterpret_cast<PfnEnumerateDevices>(dlsym(lib, "vkEnumeratePhysicalDevices"));
  auto props = reinterpret_cast<PfnDeviceProperties>(dlsym(lib, "vkGetPhysicalDeviceProperties"));
  if (!create || !destroy || !enumerate || !props)
    return Fail("device-kind", "the Vulkan loader lacks vkCreateInstance/vkEnumeratePhysicalDevices");
  VkAppInfo app{0, nullptr, "mnn-edge probe", 1, "mnn-edge", 1, (1u << 22) | (1u << 12)};
  VkInstanceInfo ci{1, nullptr, 0, &app, 0, nullptr, 0, nullptr};
  void* instance = nullptr;
  int32_t r = create(&ci, nullptr, &instance);
  const char* icd = getenv("VK_ICD_FILENAMES");
  if (icd == nullptr) icd = getenv("VK_DRIVER_FILES");
  std::string where = icd ? std::string(" (VK_ICD_FILENAMES=") + icd + ")" : "";
  if (r != 0 || instance == nullptr)
    return Fail("device-kind", "vkCreateInstance failed with VkResult " + std::to_string(r) +
                                   ": no usable Vulkan driver" + where);
  uint32_t count = 0;
  enumerate(instance, &count, nullptr);
  std::vector<void*> devices(count);
  if (count > 0) enumerate(instance, &count, devices.data());
  std::string names;
  bool gpu = false;
  bool cpu = false;
  for (uint32_t i = 0; i < count; ++i) {
    alignas(16) unsigned char buf[2048];
    std::memset(buf, 0, sizeof buf);
    props(devices[i], buf);
    int32_t type = 0;
    std::memcpy(&type, buf + 16, sizeof type);
    char name[257];
    std::memcpy(name, buf + 20, 256);
    name[256] = '\0';
    if (type >= 1 && type <= 3) gpu = true;
    if (type == 4) cpu = true;
    names += std::string(names.empty() ? "" : ", ") + "\"" + name + "\" (" + VkTypeName(type) + ")";
  }
  destroy(instance, nullptr);
  if (count == 0) return Fail("device-kind", "the Vulkan loader enumerates no physical device" + where);
  if (gpu) {
    *kind = "gpu";
    return Ok("device-kind", "Vulkan device " + names);
  }
  *kind = cpu ? "software" : "unknown";
  return Ok("device-kind", "Vulkan device " + names + (cpu ? ": a software device on the CPU, ranked after MNN's CPU backend" : ""));
}

// ---------------------------------------------------------------------------------------------- OpenCL
using ClGetPlatformIds = int32_t (*)(uint32_t, void**, uint32_t*);
using ClGetPlatformInfo = int32_t (*)(void*, uint32_t, size_t, void*, size_t*);
using ClGetDeviceIds = int32_t (*)(void*, uint64_t, uint32_t, void**, uint32_t*);
using ClGetDeviceInfo = int32_t (*)(void*, uint32_t, size_t, void*, size_t*);
constexpr uint32_t kClPlatformName = 0x0902;
constexpr uint32_t kClDeviceType = 0x1000;
constexpr uint32_t kClDeviceName = 0x102B;
constexpr uint64_t kClDeviceTypeAll = 0xFFFFFFFF;
constexpr uint64_t kClDeviceTypeCpu = 1 << 1;
constexpr uint64_t kClDeviceTypeGpu = 1 << 2;
constexpr uint64_t kClDeviceTypeAccelerator = 1 << 3;

const char* ClTypeName(uint64_t t) {
  if (t & kClDeviceTypeGpu) return "GPU";
  if (t & kClDeviceTypeCpu) return "CPU";
  if (t & kClDeviceTypeAccelerator) return "accelerator";
  return "other";
}

ProbeStep OpenClDevices(void* lib, std::string* kind) {
  auto platformIds = reinterpret_cast<ClGetPlatformIds>(dlsym(lib, "clGetPlatformIDs"));
  auto platformInfo = reinterpret_cast<ClGetPlatformInfo>(dlsym(lib, "clGetPlatformInfo"));
  auto deviceIds = reinterpret_cast<ClGetDeviceIds>(dlsym(lib, "clGetDeviceIDs"));
  auto deviceInfo = reinterpret_cast<ClGetDeviceInfo>(dlsym(lib, "clGetDeviceInfo"));
  if (!platformIds || !platformInfo || !deviceIds || !deviceInfo)
    return Fail("device-kind", "the OpenCL library lacks clGetPlatformIDs/clGetDeviceIDs");
  uint32_t n = 0;
  if (platformIds(0, nullptr, &n) != 0 || n == 0) {
    const char* vendors = getenv("OCL_ICD_VENDORS");
    return Fail("device-kind", std::string("no OpenCL platform: the ICD loader found no vendor driver") +
                                   (vendors ? std::string(" (OCL_ICD_VENDORS=") + vendors + ")" : " in /etc/OpenCL/vendors"));
  }
  std::vector<void*> platforms(n);
  platformIds(n, platforms.data(), nullptr);
  std::string gpus;
  std::string others;
  std::vector<std::string> platformNames;
  for (void* p : platforms) {
    char pname[256] = {0};
    platformInfo(p, kClPlatformName, sizeof pname - 1, pname, nullptr);
    platformNames.emplace_back(pname);
    uint32_t dn = 0;
    if (deviceIds(p, kClDeviceTypeAll, 0, nullptr, &dn) != 0 || dn == 0) continue;
    std::vector<void*> devs(dn);
    deviceIds(p, kClDeviceTypeAll, dn, devs.data(), nullptr);
    for (void* d : devs) {
      uint64_t type = 0;
      char dname[256] = {0};
      deviceInfo(d, kClDeviceType, sizeof type, &type, nullptr);
      deviceInfo(d, kClDeviceName, sizeof dname - 1, dname, nullptr);
      std::string entry = std::string("\"") + dname + "\" (" + ClTypeName(type) + ", platform \"" + pname + "\")";
      std::string& list = (type & kClDeviceTypeGpu) ? gpus : others;
      list += (list.empty() ? "" : ", ") + entry;
    }
  }
  if (!gpus.empty()) {
    *kind = "gpu";
    return Ok("device-kind", "OpenCL GPU device " + gpus);
  }
  *kind = others.empty() ? "unknown" : "software";
  std::string which = platformNames.size() == 1 ? "the only platform \"" + platformNames[0] + "\"" : "the platforms";
  // MNN's OpenCL runtime asks for CL_DEVICE_TYPE_GPU only (OpenCLRuntime.cpp), so a CPU device never counts.
  return Fail("device-kind", "no OpenCL GPU device: " + which + " offer" + (platformNames.size() == 1 ? "s " : " ") +
                                 (others.empty() ? "no device" : "a CPU device (" + others + ")"));
}

// ---------------------------------------------------------------------------------------------- init probe
// Create an executor of this type and run one small graph on it; the result must be exact.
ProbeStep TinyGraph(MNNForwardType type, const std::string& name, double* ms) {
  if (MNN::MNNGetExtraRuntimeCreator(type) == nullptr)
    return Fail("init-probe", "MNN could not create a " + name + " runtime (its creator refused this device)");
  auto t0 = std::chrono::steady_clock::now();
  MNN::BackendConfig config;
  auto exe = MNN::Express::Executor::newExecutor(type, config, 1);
  if (!exe) return Fail("init-probe", "MNN::Express::Executor::newExecutor(" + name + ") returned nothing");
  std::vector<float> got;
  {
    MNN::Express::ExecutorScope scope(exe);
    auto x = MNN::Express::_Input({1, 4, 8, 8}, MNN::Express::NCHW);
    float* in = x->writeMap<float>();
    if (in == nullptr) return Fail("init-probe", "the " + name + " runtime could not map an input tensor");
    for (int i = 0; i < 256; ++i) in[i] = static_cast<float>(i % 17) * 0.25f;
    auto y = MNN::Express::_Add(x, x);
    const float* out = y->readMap<float>();
    if (out == nullptr) return Fail("init-probe", "a 1x4x8x8 add on the " + name + " runtime produced no output");
    got.assign(out, out + 256);
  }
  *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (int i = 0; i < 256; ++i) {
    float want = static_cast<float>(i % 17) * 0.5f;
    if (std::fabs(got[i] - want) > 1e-2f)
      return Fail("init-probe", "a 1x4x8x8 add on the " + name + " runtime gave " + std::to_string(got[i]) +
                                    " at " + std::to_string(i) + ", expected " + std::to_string(want));
  }
  char buf[64];
  snprintf(buf, sizeof buf, "%.0f ms", *ms);
  return Ok("init-probe", "created the " + name + " runtime and ran a 1x4x8x8 add on it (" + buf + ")");
}

}  // namespace

std::string BackendProbe::FirstFailure() const {
  for (const auto& s : steps)
    if (s.status == "fail") return s.detail;
  return "";
}

bool CreatorRegistered(MNNForwardType type) {
  if (type == MNN_FORWARD_CPU) return true;
  // Types we found missing: our own empty entry would answer "registered" the second time.
  static std::mutex lock;
  static std::set<int> missing;
  std::lock_guard<std::mutex> guard(lock);
  if (missing.count(static_cast<int>(type)) != 0) return false;
  if (MNN::MNNGetExtraRuntimeCreator(type) != nullptr) return true;
  // The lookup above also ran MNN's registration; a second insert of a registered type is refused (false) and
  // changes nothing. An unregistered type gets an entry without creator and without check, which every later
  // lookup reads as "none", exactly as before.
  if (!MNN::MNNInsertExtraRuntimeCreator(type, nullptr, false)) return true;
  missing.insert(static_cast<int>(type));
  return false;
}

BackendProbe ProbeBackendChain(const std::string& name, MNNForwardType type) {
  BackendProbe p;
  p.name = name;
  if (type == MNN_FORWARD_CPU) {
    p.compiledIn = true;
    p.deviceKind = "software";
    p.steps.push_back(Ok("compiled-in", "MNN's CPU backend is always built"));
    return p;
  }
  p.compiledIn = CreatorRegistered(type);
  if (!p.compiledIn) {
    std::string flag = name;
    for (auto& c : flag) c = static_cast<char>(toupper(c));
    p.steps.push_back(Fail("compiled-in", "MNN built without " + name + " (rebuild MNN with -DMNN_" + flag + "=ON)"));
    return p;
  }
  p.steps.push_back(Ok("compiled-in", "the " + name + " runtime creator is registered in the loaded MNN"));
  if (type != MNN_FORWARD_VULKAN && type != MNN_FORWARD_OPENCL) {
    p.steps.push_back(TinyGraph(type, name, &p.initMs));
    return p;
  }
  Loaded l = OpenLoader(type);
  const char* api = type == MNN_FORWARD_VULKAN ? "Vulkan" : "OpenCL";
  if (l.handle == nullptr) {
    std::string versioned = Versioned(type);
    std::string unversioned = type == MNN_FORWARD_VULKAN ? "libvulkan.so" : "libOpenCL.so";
    if (!versioned.empty())
      p.steps.push_back(Fail("loader", std::string(api) + " loader present as " + versioned + " only; MNN loads " +
                                           unversioned + " — install the loader's development symlink"));
    else
      p.steps.push_back(Fail("loader", std::string("no ") + api + " loader: dlopen(" + unversioned + ") says " + l.error));
    return p;
  }
  p.steps.push_back(Ok("loader", std::string("dlopen(") + l.name + ") succeeded"));
  ProbeStep devices = type == MNN_FORWARD_VULKAN ? VulkanDevices(l.handle, &p.deviceKind) : OpenClDevices(l.handle, &p.deviceKind);
  dlclose(l.handle);
  p.steps.push_back(devices);
  if (devices.status == "fail") return p;
  p.steps.push_back(TinyGraph(type, name, &p.initMs));
  return p;
}

Napi::Value ProbeBackend(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) ThrowJs(env, "EINVAL", "probeBackend(name: string)");
  std::string name = info[0].As<Napi::String>().Utf8Value();
  int type = ForwardTypeOf(name);
  if (type < 0) ThrowJs(env, "EBACKEND", "probeBackend: unknown MNN backend \"" + name + "\"");
  BackendProbe p = ProbeBackendChain(name, static_cast<MNNForwardType>(type));
  Napi::Object o = Napi::Object::New(env);
  o.Set("name", Napi::String::New(env, p.name));
  o.Set("compiledIn", Napi::Boolean::New(env, p.compiledIn));
  o.Set("deviceKind", Napi::String::New(env, p.deviceKind));
  o.Set("initMs", Napi::Number::New(env, p.initMs));
  Napi::Array steps = Napi::Array::New(env);
  uint32_t i = 0;
  for (const auto& s : p.steps) {
    Napi::Object so = Napi::Object::New(env);
    so.Set("step", Napi::String::New(env, s.step));
    so.Set("status", Napi::String::New(env, s.status));
    so.Set("detail", Napi::String::New(env, s.detail));
    steps.Set(i++, so);
  }
  o.Set("steps", steps);
  return o;
}

}  // namespace mnn_edge
