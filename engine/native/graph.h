// GraphHandle: a non-LLM MNN model (VAD, ASR encoder, classifier) through Express::Module. Each handle owns
// its executor so two graphs can run on two threads; input tensors are created once per shape and reused.
#pragma once

#include <napi.h>

#include <MNN/expr/Executor.hpp>
#include <MNN/expr/Module.hpp>

#include <memory>
#include <string>
#include <vector>

#include "common.h"

namespace mnn_edge {

class GraphHandle : public Napi::ObjectWrap<GraphHandle> {
 public:
  static Napi::Function Init(Napi::Env env);
  explicit GraphHandle(const Napi::CallbackInfo& info);
  ~GraphHandle() override;

 private:
  Napi::Value Load(const Napi::CallbackInfo& info);
  Napi::Value Forward(const Napi::CallbackInfo& info);
  Napi::Value Info(const Napi::CallbackInfo& info);
  Napi::Value Dispose(const Napi::CallbackInfo& info);

  struct State {
    std::string path;
    std::shared_ptr<MNN::Express::Executor> executor;
    std::shared_ptr<MNN::Express::Executor::RuntimeManager> runtime;
    std::shared_ptr<MNN::Express::Module> module;
    std::vector<std::string> inputNames;
    std::vector<std::string> outputNames;
    std::vector<MNN::Express::Variable::Info> inputInfo;
    // Reused input variables: forward() writes into them when the shape and type repeat.
    std::vector<MNN::Express::VARP> inputs;
  };

  std::shared_ptr<State> state_;
  BusyFlag busy_;
};

}  // namespace mnn_edge
