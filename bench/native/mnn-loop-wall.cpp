// bench/engine's baseline (d): MNN's own generation loop driven straight from C++ and timed with a steady clock,
// the way any program on MNN's Llm API experiences it. llm_bench's decode rate divides by MNN's decode timer,
// which covers each step's detokenize and forward but not its sampling and bookkeeping; this tool prints both
// rates for the same runs, so the difference between the two timers is a measured figure, not an assumption.
//
// Built at bench time against the installed MNN (bench/lib/loop-wall.ts). Usage:
//   mnn-loop-wall CONFIG PROMPT_TOKENS DECODE_TOKENS
// Loads the model, runs one discarded generation (as llm_bench does), prints "ready", then runs one measured
// generation per line read from stdin and prints {"prefillMs":…,"wallTps":…,"timerTps":…,"sampleUs":…} for it, so that a
// benchmark can interleave it run by run with what it compares.
#include <llm/llm.hpp>
#include <MNN/expr/ExecutorScope.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

using MNN::Transformer::Llm;

namespace {

struct Run {
  double prefillMs;  // wall clock of the prefill call (MNN's per-generation setup included): its first token
  double wallTps;
  double timerTps;
  double sampleUs;
};

Run Measure(Llm* llm, const std::vector<int>& ids, int decodeTokens) {
  const auto* ctx = llm->getContext();
  auto p0 = std::chrono::steady_clock::now();
  llm->response(ids, nullptr, "", 0);  // prefill only
  auto t0 = std::chrono::steady_clock::now();
  double prefillMs = std::chrono::duration<double, std::milli>(t0 - p0).count();
  llm->generate(decodeTokens);
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  double n = ctx->gen_seq_len;
  return {prefillMs, n * 1e6 / us, n * 1e6 / static_cast<double>(ctx->decode_us), static_cast<double>(ctx->sample_us) / n};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s CONFIG PROMPT_TOKENS DECODE_TOKENS\n", argv[0]);
    return 2;
  }
  const int promptTokens = std::atoi(argv[2]);
  const int decodeTokens = std::atoi(argv[3]);
  Llm* llm = Llm::createLLM(argv[1]);
  if (llm == nullptr) return 1;
  // As llm_bench configures it for `-t 1 -c 0`: one thread, normal precision, a fresh KV cache per run.
  llm->set_config(R"({"thread_num":1,"precision":"normal","reuse_kv":false,"async":false})");
  if (!llm->load()) {
    std::fprintf(stderr, "MNN Llm::load failed for %s\n", argv[1]);
    return 1;
  }
  MNN::Express::ExecutorScope scope(llm->getExecutor());
  // llm_bench's prompt: token id 16, promptTokens times.
  std::vector<int> ids(static_cast<size_t>(promptTokens), 16);
  Measure(llm, ids, decodeTokens);
  std::printf("ready\n");
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
    Run r = Measure(llm, ids, decodeTokens);
    std::printf("{\"prefillMs\":%.3f,\"wallTps\":%.3f,\"timerTps\":%.3f,\"sampleUs\":%.3f}\n", r.prefillMs, r.wallTps,
                r.timerTps, r.sampleUs);
    std::fflush(stdout);
  }
  Llm::destroy(llm);
  return 0;
}
