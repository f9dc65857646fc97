// Backend names as MNN's LLM config spells them, their forward types, and whether this MNN can run them.
#pragma once

#include <MNN/MNNForwardType.h>

#include <string>
#include <vector>

namespace mnn_edge {

struct BackendName {
  const char* name;
  MNNForwardType type;
};

const std::vector<BackendName>& KnownBackends();
// -1 when the name is not one MNN knows.
int ForwardTypeOf(const std::string& name);
// Compiled into this MNN (a runtime creator is registered).
bool BackendCompiledIn(MNNForwardType type);
// A runtime of this type can be created here (drivers present), not just linked in.
bool BackendUsable(MNNForwardType type);

}  // namespace mnn_edge
