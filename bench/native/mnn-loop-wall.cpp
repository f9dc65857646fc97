// bench/engine's baseline (d): MNN's own generation loop driven straight from C++ and timed with a steady clock,
// the way any program on MNN's Llm API experiences it. llm_bench's decode rate divides by MNN's decode timer,
// which covers each step's detokenize and forward but not its sampling and bookkeeping; this tool prints both
// rates for the same runs, so the difference between the two timers is a measured figure, not an assumption.
//
// Built at bench time against the installed MNN (bench/lib-loop-wall.ts). Usage:
//   mnn-loop-wall CONFIG PROMPT_TOKENS DECODE_TOKENS REPS
// Prints one JSON line: {"wallTps":[...],"timerTps":[...],"sampleUs":[...]} (one entry per measured rep; one
// discarded rep runs first, as in llm_bench).
#include <llm/llm.hpp>
#include <MNN/expr/ExecutorScope.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using MNN::Transformer::Llm;

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s CONFIG PROMPT_TOKENS DECODE_TOKENS REPS\n", argv[0]);
    return 2;
  }
  const int promptTokens = std::atoi(argv[2]);
  const int decodeTokens = std::atoi(argv[3]);
  const int reps = std::atoi(argv[4]);
  Llm* llm = Llm::createLLM(argv[1]);
  if (llm == nullptr) return 1;
  // As llm_bench configures it for `-t 1 -c 0`: one thread, normal precision, a fresh KV cache per run.
  llm->set_config(R"({"thread_num":1,"precision":"normal","reuse_kv":false,"async":false})");
  if (!llm->load()) {
    std::fprintf(stderr, "MNN Llm::load failed for %s\n", argv[1]);
    return 1;
  }
  MNN::Express::ExecutorScope scope(llm->getExecutor());
  const auto* ctx = llm->getContext();
  // llm_bench's prompt: token id 16, promptTokens times.
  std::vector<int> ids(static_cast<size_t>(promptTokens), 16);
  std::string wall = "[", timer = "[", sample = "[";
  for (int r = 0; r <= reps; ++r) {
    llm->response(ids, nullptr, "", 0);  // prefill only
    auto t0 = std::chrono::steady_clock::now();
    llm->generate(decodeTokens);
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    if (r == 0) continue;
    int n = ctx->gen_seq_len;
    char buf[64];
    const char* sep = r > 1 ? "," : "";
    std::snprintf(buf, sizeof buf, "%s%.3f", sep, n * 1e6 / us);
    wall += buf;
    std::snprintf(buf, sizeof buf, "%s%.3f", sep, n * 1e6 / static_cast<double>(ctx->decode_us));
    timer += buf;
    std::snprintf(buf, sizeof buf, "%s%.3f", sep, static_cast<double>(ctx->sample_us) / n);
    sample += buf;
  }
  std::printf("{\"wallTps\":%s],\"timerTps\":%s],\"sampleUs\":%s]}\n", wall.c_str(), timer.c_str(), sample.c_str());
  Llm::destroy(llm);
  return 0;
}
