#include "graph.h"

#include <MNN/Interpreter.hpp>
#include <MNN/expr/ExecutorScope.hpp>
#include <MNN/expr/NeuralNetWorkOp.hpp>

#include <cstring>
#include <utility>

#include "backend_probe.h"
#include "backends.h"
#include "chosen_backend.h"

namespace mnn_edge {

using MNN::Express::VARP;

namespace {

struct GraphOptions {
  std::string path;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::string backend = "cpu";
  int threads = 1;
  int precision = 0;  // BackendConfig::PrecisionMode
  int memory = 0;
  int power = 0;
};

struct TensorIn {
  std::vector<int> shape;
  halide_type_t type;
  std::string typeName;
  std::vector<uint8_t> bytes;
};

struct TensorOut {
  std::vector<int> shape;
  std::string typeName;
  std::vector<uint8_t> bytes;
};

std::vector<std::string> StringList(const Napi::Value& v) {
  std::vector<std::string> out;
  if (!v.IsArray()) return out;
  auto arr = v.As<Napi::Array>();
  for (uint32_t i = 0; i < arr.Length(); ++i) out.push_back(arr.Get(i).As<Napi::String>().Utf8Value());
  return out;
}

int Level(const Napi::Object& o, const char* key) {
  Napi::Value v = o.Get(key);
  if (!v.IsString()) return 0;
  std::string s = v.As<Napi::String>().Utf8Value();
  if (s == "high") return 1;
  if (s == "low") return 2;
  if (s == "low_bf16") return 3;
  return 0;  // normal
}

bool TypedArrayType(napi_typedarray_type t, halide_type_t* type, std::string* name) {
  switch (t) {
    case napi_float32_array:
      *type = halide_type_of<float>();
      *name = "float32";
      return true;
    case napi_int32_array:
      *type = halide_type_of<int32_t>();
      *name = "int32";
      return true;
    case napi_uint8_array:
      *type = halide_type_of<uint8_t>();
      *name = "uint8";
      return true;
    case napi_int8_array:
      *type = halide_type_of<int8_t>();
      *name = "int8";
      return true;
    default:
      return false;
  }
}

std::string HalideName(halide_type_t t) {
  if (t.code == halide_type_float && t.bits == 32) return "float32";
  if (t.code == halide_type_int && t.bits == 32) return "int32";
  if (t.code == halide_type_uint && t.bits == 8) return "uint8";
  if (t.code == halide_type_int && t.bits == 8) return "int8";
  return "unsupported(code " + std::to_string(t.code) + ", bits " + std::to_string(t.bits) + ")";
}

bool SameType(halide_type_t a, halide_type_t b) { return a.code == b.code && a.bits == b.bits; }

// One input of forward(), read from its JS object on the JS thread and checked against what the model declares
// for it (`declared`; nullptr: nothing declared), so that a wrong type or shape is refused with the input's name
// before any work is queued.
TensorIn ReadInput(Napi::Env env, const Napi::Object& item, const std::string& name,
                   const MNN::Express::Variable::Info* declared) {
  auto data = item.Get("data").As<Napi::TypedArray>();
  TensorIn t;
  if (!TypedArrayType(data.TypedArrayType(), &t.type, &t.typeName)) {
    ThrowJs(env, "EINVAL", "Module.forward: input \"" + name + "\" must be a Float32Array, Int32Array, "
                               "Uint8Array or Int8Array");
  }
  auto shape = item.Get("shape").As<Napi::Array>();
  size_t count = 1;
  for (uint32_t d = 0; d < shape.Length(); ++d) {
    int v = shape.Get(d).As<Napi::Number>().Int32Value();
    t.shape.push_back(v);
    count *= static_cast<size_t>(v < 0 ? 0 : v);
  }
  if (count != data.ElementLength()) {
    ThrowJs(env, "EINVAL", "Module.forward: input \"" + name + "\" has " + std::to_string(data.ElementLength()) +
                               " elements but shape " + ShapeToString(t.shape) + " needs " + std::to_string(count));
  }
  if (declared != nullptr) {
    const auto& expected = *declared;
    if (!SameType(expected.type, t.type)) {
      ThrowJs(env, "EINVAL", "Module.forward: input \"" + name + "\" expects " + HalideName(expected.type) +
                                 " but received " + t.typeName);
    }
    // The rank and every dimension the model fixes (> 0) must match; -1/0 mark dynamic ones. An empty
    // declared shape is a scalar or an unknown rank, which MNN resolves itself.
    bool matches = expected.dim.empty() || expected.dim.size() == t.shape.size();
    for (size_t d = 0; matches && d < expected.dim.size(); ++d) {
      matches = expected.dim[d] <= 0 || expected.dim[d] == t.shape[d];
    }
    if (!matches) {
      ThrowJs(env, "EINVAL", "Module.forward: input \"" + name + "\" expects shape " + ShapeToString(expected.dim) +
                                 " but received " + ShapeToString(t.shape));
    }
  }
  auto* bytes = static_cast<uint8_t*>(data.ArrayBuffer().Data()) + data.ByteOffset();
  t.bytes.assign(bytes, bytes + data.ByteLength());
  return t;
}

// One output of forward() as JS sees it: {name, data (a typed array of its type over a copy), shape, type}.
Napi::Object OutputToJs(Napi::Env e, const std::string& name, const TensorOut& out) {
  Napi::ArrayBuffer buf = Napi::ArrayBuffer::New(e, out.bytes.size());
  if (!out.bytes.empty()) std::memcpy(buf.Data(), out.bytes.data(), out.bytes.size());
  size_t n = out.bytes.size();
  Napi::Value data;
  if (out.typeName == "float32") {
    data = Napi::Float32Array::New(e, n / 4, buf, 0);
  } else if (out.typeName == "int32") {
    data = Napi::Int32Array::New(e, n / 4, buf, 0);
  } else if (out.typeName == "int8") {
    data = Napi::Int8Array::New(e, n, buf, 0);
  } else {
    data = Napi::Uint8Array::New(e, n, buf, 0);
  }
  Napi::Object o = Napi::Object::New(e);
  o.Set("name", name);
  o.Set("data", data);
  Napi::Array shape = Napi::Array::New(e, out.shape.size());
  for (size_t d = 0; d < out.shape.size(); ++d) shape.Set(d, out.shape[d]);
  o.Set("shape", shape);
  o.Set("type", out.typeName);
  return o;
}

}  // namespace

Napi::Function GraphHandle::Init(Napi::Env env) {
  return DefineClass(env, "GraphHandle",
                     {
                         InstanceMethod<&GraphHandle::Load>("load"),
                         InstanceMethod<&GraphHandle::Forward>("forward"),
                         InstanceMethod<&GraphHandle::Info>("info"),
                         InstanceMethod<&GraphHandle::Dispose>("dispose"),
                     });
}

GraphHandle::GraphHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<GraphHandle>(info) {}

GraphHandle::~GraphHandle() = default;

// load({path, inputs, outputs, backend, threads, precision, memory, power}) → Promise<void>
Napi::Value GraphHandle::Load(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (state_) ThrowJs(env, "ESTATE", "Module.load: already loaded");
  if (info.Length() < 1 || !info[0].IsObject()) ThrowJs(env, "EINVAL", "Module.load(options: object)");
  auto o = info[0].As<Napi::Object>();
  auto opts = std::make_shared<GraphOptions>();
  opts->path = o.Get("path").As<Napi::String>().Utf8Value();
  opts->inputs = StringList(o.Get("inputs"));
  opts->outputs = StringList(o.Get("outputs"));
  if (o.Get("backend").IsString()) opts->backend = o.Get("backend").As<Napi::String>().Utf8Value();
  if (o.Get("threads").IsNumber()) opts->threads = o.Get("threads").As<Napi::Number>().Int32Value();
  opts->precision = Level(o, "precision");
  opts->memory = Level(o, "memory");
  opts->power = Level(o, "power");
  int type = ForwardTypeOf(opts->backend);
  if (type < 0) ThrowJs(env, "EBACKEND", "Module.load: unknown MNN backend \"" + opts->backend + "\"");
  return PromiseWorker<std::shared_ptr<State>>::Start(
      env, info.This().As<Napi::Object>(), &busy_, "Module.load",
      [opts, type]() {
        if (!FileExists(opts->path)) throw EngineError("ENOENT", "model file not found: " + opts->path);
        auto fwd = static_cast<MNNForwardType>(type);
        if (!BackendUsable(fwd)) {
          BackendProbe probe = ProbeBackendChain(opts->backend, fwd);
          throw EngineError("EBACKEND", "MNN backend \"" + opts->backend + "\" requested for " + opts->path +
                                            (probe.compiledIn ? " is compiled in but cannot start on this device: "
                                                              : " cannot run: ") +
                                            probe.FirstFailure() + "; refusing to fall back to CPU silently");
        }
        auto state = std::make_shared<State>();
        state->path = opts->path;
        MNN::BackendConfig bn;
        bn.precision = static_cast<MNN::BackendConfig::PrecisionMode>(opts->precision);
        bn.memory = static_cast<MNN::BackendConfig::MemoryMode>(opts->memory);
        bn.power = static_cast<MNN::BackendConfig::PowerMode>(opts->power);
        state->executor = MNN::Express::Executor::newExecutor(fwd, bn, opts->threads);
        MNN::Express::ExecutorScope scope(state->executor);
        MNN::ScheduleConfig sc;
        sc.type = fwd;
        sc.numThread = opts->threads;
        sc.backendConfig = &bn;
        state->runtime.reset(MNN::Express::Executor::RuntimeManager::createRuntimeManager(sc),
                             MNN::Express::Executor::RuntimeManager::destroy);
        if (!state->runtime) throw EngineError("ELOAD", "MNN RuntimeManager::createRuntimeManager failed for " + opts->path);
        RequireChosenBackend(state->runtime, opts->backend, opts->path);
        MNN::Express::Module::Config mc;
        mc.shapeMutable = true;
        state->module.reset(
            MNN::Express::Module::load(opts->inputs, opts->outputs, opts->path.c_str(), state->runtime, &mc),
            MNN::Express::Module::destroy);
        if (!state->module) {
          throw EngineError("ELOAD", "MNN Module::load failed for " + opts->path +
                                         " (not an MNN model, corrupt, or wrong input/output names)");
        }
        const auto* mi = state->module->getInfo();
        state->inputNames = mi->inputNames;
        state->outputNames = mi->outputNames;
        state->inputInfo = mi->inputs;
        state->inputs.resize(state->inputNames.size());
        return state;
      },
      [this](Napi::Env e, std::shared_ptr<State>& state) {
        state_ = state;
        return e.Undefined();
      });
}

Napi::Value GraphHandle::Info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!state_) ThrowJs(env, "ESTATE", "Module.info: not loaded");
  Napi::Object o = Napi::Object::New(env);
  Napi::Array inputs = Napi::Array::New(env);
  for (size_t i = 0; i < state_->inputNames.size(); ++i) {
    Napi::Object in = Napi::Object::New(env);
    in.Set("name", state_->inputNames[i]);
    if (i < state_->inputInfo.size()) {
      Napi::Array dims = Napi::Array::New(env);
      for (size_t d = 0; d < state_->inputInfo[i].dim.size(); ++d) dims.Set(d, state_->inputInfo[i].dim[d]);
      in.Set("shape", dims);
      in.Set("type", HalideName(state_->inputInfo[i].type));
    }
    inputs.Set(i, in);
  }
  o.Set("inputs", inputs);
  Napi::Array outputs = Napi::Array::New(env);
  for (size_t i = 0; i < state_->outputNames.size(); ++i) outputs.Set(i, state_->outputNames[i]);
  o.Set("outputs", outputs);
  return o;
}

// forward([{data: TypedArray, shape: number[]}, ...]) → Promise<[{data, shape, type}, ...]>
Napi::Value GraphHandle::Forward(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!state_) ThrowJs(env, "ESTATE", "Module.forward: the model is not loaded (or was disposed)");
  if (info.Length() < 1 || !info[0].IsArray()) ThrowJs(env, "EINVAL", "Module.forward(inputs: array)");
  auto arr = info[0].As<Napi::Array>();
  auto state = state_;
  if (arr.Length() != state->inputNames.size()) {
    ThrowJs(env, "EINVAL", "Module.forward: " + state->path + " takes " + std::to_string(state->inputNames.size()) +
                               " inputs but received " + std::to_string(arr.Length()));
  }
  auto tensors = std::make_shared<std::vector<TensorIn>>();
  for (uint32_t i = 0; i < arr.Length(); ++i) {
    const MNN::Express::Variable::Info* declared = i < state->inputInfo.size() ? &state->inputInfo[i] : nullptr;
    TensorIn t = ReadInput(env, arr.Get(i).As<Napi::Object>(), state->inputNames[i], declared);
    tensors->push_back(std::move(t));
  }
  return PromiseWorker<std::vector<TensorOut>>::Start(
      env, info.This().As<Napi::Object>(), &busy_, "Module.forward",
      [state, tensors]() {
        MNN::Express::ExecutorScope scope(state->executor);
        for (size_t i = 0; i < tensors->size(); ++i) {
          auto& t = (*tensors)[i];
          VARP& var = state->inputs[i];
          auto* info = var.get() != nullptr ? var->getInfo() : nullptr;
          if (info == nullptr || info->dim != t.shape || !SameType(info->type, t.type)) {
            var = MNN::Express::_Input(t.shape, state->inputInfo.size() > i ? state->inputInfo[i].order
                                                                               : MNN::Express::NCHW,
                                       t.type);
          }
          auto* dst = var->writeMap<uint8_t>();
          if (dst == nullptr && !t.bytes.empty()) {
            throw EngineError("EENGINE", "MNN VARP::writeMap failed for input \"" + state->inputNames[i] + "\" of " +
                                             state->path);
          }
          if (!t.bytes.empty()) std::memcpy(dst, t.bytes.data(), t.bytes.size());
        }
        auto outputs = state->module->onForward(state->inputs);
        if (outputs.size() != state->outputNames.size()) {
          throw EngineError("EENGINE", "MNN Module::onForward failed for " + state->path + " (returned " +
                                           std::to_string(outputs.size()) + " of " +
                                           std::to_string(state->outputNames.size()) + " outputs)");
        }
        std::vector<TensorOut> result;
        for (size_t i = 0; i < outputs.size(); ++i) {
          auto* info = outputs[i]->getInfo();
          const void* src = outputs[i]->readMap<void>();
          if (info == nullptr || (src == nullptr && info->size > 0)) {
            throw EngineError("EENGINE", "MNN VARP::readMap failed for output \"" + state->outputNames[i] + "\" of " +
                                             state->path);
          }
          TensorOut out;
          out.shape = info->dim;
          out.typeName = HalideName(info->type);
          size_t bytes = static_cast<size_t>(info->size) * (info->type.bits / 8);
          out.bytes.assign(static_cast<const uint8_t*>(src), static_cast<const uint8_t*>(src) + bytes);
          result.push_back(std::move(out));
        }
        return result;
      },
      [state](Napi::Env e, std::vector<TensorOut>& outs) {
        Napi::Array result = Napi::Array::New(e, outs.size());
        for (size_t i = 0; i < outs.size(); ++i) {
          result.Set(i, OutputToJs(e, state->outputNames[i], outs[i]));
        }
        return result;
      });
}

Napi::Value GraphHandle::Dispose(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (busy_.IsBusy()) ThrowJs(env, "EBUSY", "Module.dispose: the model is busy (await the running call first)");
  auto state = std::move(state_);
  state_.reset();
  auto d = Napi::Promise::Deferred::New(env);
  if (!state) {
    d.Resolve(env.Undefined());
    return d.Promise();
  }
  return PromiseWorker<bool>::Start(
      env, info.This().As<Napi::Object>(), &busy_, "Module.dispose",
      [state]() mutable {
        MNN::Express::ExecutorScope scope(state->executor);
        state->inputs.clear();
        state->module.reset();
        state->runtime.reset();
        return true;
      },
      [](Napi::Env e, bool&) { return e.Undefined(); });
}

}  // namespace mnn_edge
