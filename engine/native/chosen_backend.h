// After a load: which runtime MNN actually made. MNN substitutes the CPU when the requested runtime cannot
// start (Schedule::getAppropriateType: "Can't Find type=N backend, use 0 instead"), so a creator existing before
// the load proves nothing; the model's own runtime manager is the fact.
#pragma once

#include <MNN/expr/Executor.hpp>
#include <llm/llm.hpp>

#include <memory>
#include <string>

namespace mnn_edge {

// The forward type of the runtime manager's first runtime, or -1 when MNN does not say.
int ChosenForwardType(const std::shared_ptr<MNN::Express::Executor::RuntimeManager>& rt);
// backend_type of the LLM's config (as dumped by MNN), "cpu" when unset.
std::string LlmRequestedBackend(MNN::Transformer::Llm* llm);
// Throws EngineError EBACKEND naming the requested and the chosen runtime and the first failed probe step.
void RequireChosenBackend(const std::shared_ptr<MNN::Express::Executor::RuntimeManager>& rt,
                          const std::string& requested, const std::string& what);
void RequireLlmBackend(MNN::Transformer::Llm* llm, const std::string& what);

}  // namespace mnn_edge
