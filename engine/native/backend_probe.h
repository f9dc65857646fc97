// The engine's half of a GPU backend's evidence chain: is it compiled into this MNN, does the loader MNN dlopens
// open, which devices does it enumerate (GPU or CPU-typed), and does a runtime of that type run a tiny graph.
// Each step is reported separately: "compiled in" and "initialises on this board" have different fixes.
#pragma once

#include <MNN/MNNForwardType.h>
#include <napi.h>

#include <string>
#include <vector>

namespace mnn_edge {

struct ProbeStep {
  std::string step;    // compiled-in | loader | device-kind | init-probe
  std::string status;  // ok | fail | skip
  std::string detail;
};

struct BackendProbe {
  std::string name;
  bool compiledIn = false;
  std::string deviceKind = "unknown";  // gpu | software | unknown
  std::vector<ProbeStep> steps;
  double initMs = 0;
  // The first failing step's detail, or empty when every step passed.
  std::string FirstFailure() const;
  bool Usable() const { return FirstFailure().empty(); }
};

// A runtime creator for this type is registered in the loaded MNN, whether or not the device initialises.
bool CreatorRegistered(MNNForwardType type);
// Runs the whole chain for one backend (cpu answers at once).
BackendProbe ProbeBackendChain(const std::string& name, MNNForwardType type);

// probeBackend(name) → {name, compiledIn, deviceKind, initMs, steps: [{step, status, detail}]}
Napi::Value ProbeBackend(const Napi::CallbackInfo& info);

}  // namespace mnn_edge
