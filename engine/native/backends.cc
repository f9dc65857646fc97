#include "backends.h"

#include "backend_probe.h"

#include <MNN/Interpreter.hpp>
#include <MNN/expr/Executor.hpp>

#include <memory>

namespace mnn_edge {

const std::vector<BackendName>& KnownBackends() {
  static const std::vector<BackendName> names = {
      {"cpu", MNN_FORWARD_CPU},       {"metal", MNN_FORWARD_METAL},   {"cuda", MNN_FORWARD_CUDA},
      {"opencl", MNN_FORWARD_OPENCL}, {"opengl", MNN_FORWARD_OPENGL}, {"vulkan", MNN_FORWARD_VULKAN},
      {"npu", MNN_FORWARD_NN},        {"hexagon", MNN_FORWARD_HEXAGON}, {"musa", MNN_FORWARD_MUSA},
  };
  return names;
}

int ForwardTypeOf(const std::string& name) {
  for (const auto& b : KnownBackends()) {
    if (name == b.name) return static_cast<int>(b.type);
  }
  return -1;
}

bool BackendCompiledIn(MNNForwardType type) {
  // Not RuntimeManager::isBackendSupport: it asks for a creator that also starts a runtime here, so OpenCL on a
  // board without a GPU device would read as "not compiled in", and the fix (a GPU driver) would be hidden.
  return CreatorRegistered(type);
}

bool BackendUsable(MNNForwardType type) {
  if (!BackendCompiledIn(type)) return false;
  if (type == MNN_FORWARD_CPU) return true;
  MNN::ScheduleConfig config;
  config.type = type;
  config.numThread = 1;
  std::unique_ptr<MNN::Express::Executor::RuntimeManager, void (*)(MNN::Express::Executor::RuntimeManager*)> rt(
      MNN::Express::Executor::RuntimeManager::createRuntimeManager(config),
      MNN::Express::Executor::RuntimeManager::destroy);
  if (!rt) return false;
  // MNN substitutes CPU when the requested runtime cannot start; the first runtime tells which one it made.
  int actual = -1;
  if (!rt->getInfo(MNN::Interpreter::BACKENDS, &actual)) return false;
  return actual == static_cast<int>(type);
}

}  // namespace mnn_edge
