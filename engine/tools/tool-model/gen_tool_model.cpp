// gen_tool_model: writes llm.mnn (+ its empty .weight) and embeddings_bf16.bin of a hand-set, weight-by-design LLM for
// MNN's LLM engine whose greedy answer is a chosen script: a tool call when the latest turn is the user's, a final
// sentence when the latest turn is a tool result. Test fixture for the acting assistant (docs/TOOL-MODEL.md);
// make-tool-model.ts chooses the token ids, writes the tokenizer and the JSON configs, and runs this.
//
// Usage: gen_tool_model OUT_DIR --vocab N --user ID --tool ID --call-first ID --final-first ID --chain A:B[,A:B...]
//
// The whole model is one layer:
//   * the embedding of a script token t that has a successor is a one-hot on a dimension of its own; the lm_head
//     maps that dimension to the successor's logit (+100), so from any script token the chain goes on, token by
//     token, to the end-of-turn token: a "bigram chain";
//   * the embeddings of the two turn openers (--user: "<|im_start|>user\n", --tool: the opener of a tool-result
//     turn, "<|im_start|>user\n<tool_response>") carry a marker dimension; ONE attention head (no RoPE: its score
//     depends on content and absolute position only, not on distance) scores every opener at
//     30 + position, every other token at 0, so the latest opener takes all the weight, at any distance; its value
//     is 1 on a tool opener and 0 elsewhere, so the head's output is a flag: 1 when the latest turn is a tool
//     result, 0 when it is the user's (or when there is no opener at all);
//   * outside the chain the flag picks the first script token: call-first gets 10 - 20 * flag, final-first
//     -10 + 20 * flag, every other token -50.
// All weights are small integers (exact in bf16 and fp16), so the argmax has margins of 20 to 100 logits and does
// not depend on the build's kernels.
#include <MNN/MNNDefine.h>
#include <MNN/expr/Expr.hpp>
#include <MNN/expr/ExprCreator.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "MNN_generated.h"

using namespace MNN;
using namespace MNN::Express;

namespace {

constexpr int kHidden = 64;         // llm_config.json hidden_size: embedding rows and the engine's sizes
constexpr int kHeadDim = 16;        // the one attention head (one KV head)
constexpr int kMarkerDim = 0;       // embedding dimension of both turn openers
constexpr int kToolDim = 1;         // embedding dimension of the tool-result opener only
constexpr int kFirstChainDim = 2;   // chain tokens take the dimensions from here on
constexpr float kOpenerScore = 30;  // an opener at position p scores 30 + p; any other token 0
constexpr float kChainLogit = 100;  // a chain token's successor
constexpr float kFirstLogit = 10;   // the script the flag picks (the other one gets -10)
constexpr float kOtherLogit = -50;  // everything else

struct Spec {
  int vocab = 0;
  int user = -1;
  int tool = -1;
  int callFirst = -1;
  int finalFirst = -1;
  std::vector<std::pair<int, int>> chain;  // token -> successor
};

VARP constant(const std::vector<float>& v, const std::vector<int>& shape) {
  return _Const(v.data(), shape, NCHW, halide_type_of<float>());
}

VARP intConstant(const std::vector<int>& v) {
  return _Const(v.data(), {static_cast<int>(v.size())}, NCHW, halide_type_of<int>());
}

// A [rows, cols] matrix that is zero but for one 1 at (row, col).
VARP unit(int rows, int cols, int row, int col) {
  std::vector<float> m(static_cast<size_t>(rows) * cols, 0.0f);
  m[static_cast<size_t>(row) * cols + col] = 1.0f;
  return constant(m, {rows, cols});
}

// MNN's fused attention with the KV cache kept inside the op (the LLM engine drives it through its KVMeta).
VARP cachedAttention(VARP q, VARP k, VARP v, VARP mask) {
  std::unique_ptr<OpT> op(new OpT);
  op->type = OpType_Attention;
  op->name = "/layers.0/self_attn/FusedAttention";
  op->main.type = OpParameter_AttentionParam;
  op->main.value = new AttentionParamT;
  op->main.AsAttentionParam()->kv_cache = true;
  op->main.AsAttentionParam()->layer_index = 0;
  return Variable::create(Expr::create(op.get(), {q, k, v, mask}));
}

// hidden[:, logits_index:, :] (-1: the last position, 0: all), as the engine's logits_index asks.
VARP fromLogitsIndex(VARP hidden, VARP logitsIndex) {
  auto begin = _Concat({intConstant({0}), logitsIndex, intConstant({0})}, 0);
  return _StridedSlice(hidden, begin, intConstant({0, 0, 0}), intConstant({1, 1, 1}), 5, 7, 0, 0, 0);
}

bool writeGraph(const Spec& s, const std::string& dir) {
  auto embeds = _Input({4, 1, kHidden}, NCHW, halide_type_of<float>());
  embeds->setName("input_ids");
  auto mask = _Input({}, NCHW, halide_type_of<float>());
  mask->setName("attention_mask");
  auto positions = _Input({1, 4}, NCHW, halide_type_of<int>());
  positions->setName("position_ids");
  auto logitsIndex = _Input({1}, NCHW, halide_type_of<int>());
  logitsIndex->setName("logits_index");

  auto x = _Reshape(embeds, {-1, kHidden});                               // [seq, hidden]
  auto pos = _Reshape(_Cast<float>(positions), {-1, 1});                  // [seq, 1]
  auto opener = _MatMul(x, unit(kHidden, 1, kMarkerDim, 0));              // [seq, 1]: 1 on either opener
  auto toolOpener = _MatMul(x, unit(kHidden, 1, kToolDim, 0));            // [seq, 1]: 1 on the tool opener
  auto score = opener * (pos + _Scalar<float>(kOpenerScore));             // [seq, 1]
  // q is the same at every position: sqrt(head_dim) on dimension 0 cancels the op's 1/sqrt(head_dim) scale, so
  // a key's logit is its dimension 0. (x @ 0 gives q its [seq, ...] shape.)
  std::vector<float> qRow(kHeadDim, 0.0f);
  qRow[0] = std::sqrt(static_cast<float>(kHeadDim));
  auto q = _MatMul(x, constant(std::vector<float>(kHidden * kHeadDim, 0.0f), {kHidden, kHeadDim})) +
           constant(qRow, {1, kHeadDim});
  auto k = _MatMul(score, unit(1, kHeadDim, 0, 0));                       // [seq, head_dim]
  auto v = _MatMul(toolOpener, unit(1, kHeadDim, 0, 0));
  auto shape = std::vector<int>{1, -1, 1, kHeadDim};
  auto attended = cachedAttention(_Reshape(q, shape), _Reshape(k, shape), _Reshape(v, shape), mask);
  auto flag = _MatMul(_Reshape(attended, {-1, kHeadDim}), unit(kHeadDim, 1, 0, 0));  // [seq, 1]

  const int features = kHidden + 1;                                       // the embedding, then the flag
  auto hidden = _Reshape(_Concat({x, flag}, -1), {1, -1, features});
  std::vector<float> head(static_cast<size_t>(features) * s.vocab, 0.0f);  // [features, vocab]
  std::vector<float> bias(s.vocab, kOtherLogit);
  for (size_t i = 0; i < s.chain.size(); ++i)
    head[static_cast<size_t>(kFirstChainDim + i) * s.vocab + s.chain[i].second] = kChainLogit - kOtherLogit;
  head[static_cast<size_t>(kHidden) * s.vocab + s.callFirst] = -2 * kFirstLogit;
  head[static_cast<size_t>(kHidden) * s.vocab + s.finalFirst] = 2 * kFirstLogit;
  bias[s.callFirst] = kFirstLogit;
  bias[s.finalFirst] = -kFirstLogit;
  // A chain successor that is also a first token keeps its chain logit on top of its first-token terms.
  auto last = _Reshape(fromLogitsIndex(hidden, logitsIndex), {-1, features});
  auto logits = _MatMul(last, constant(head, {features, s.vocab})) + constant(bias, {s.vocab});
  logits = _Reshape(logits, {1, -1, s.vocab});
  logits->setName("logits");

  const std::string path = dir + "/llm.mnn";
  Variable::save({logits}, path.c_str());
  if (!std::filesystem::exists(path)) {
    std::fprintf(stderr, "gen_tool_model: could not write %s\n", path.c_str());
    return false;
  }
  // The engine opens llm_weight even when every weight is inline.
  std::ofstream(path + ".weight", std::ios::binary | std::ios::trunc);
  return true;
}

// embeddings_bf16.bin: [vocab, hidden] bf16, row-major, no header. 1.0 is 0x3F80 in bf16.
bool writeEmbeddings(const Spec& s, const std::string& dir) {
  std::vector<uint16_t> table(static_cast<size_t>(s.vocab) * kHidden, 0);
  auto set = [&](int token, int dim) { table[static_cast<size_t>(token) * kHidden + dim] = 0x3F80; };
  set(s.user, kMarkerDim);
  set(s.tool, kMarkerDim);
  set(s.tool, kToolDim);
  for (size_t i = 0; i < s.chain.size(); ++i) set(s.chain[i].first, kFirstChainDim + static_cast<int>(i));
  const std::string path = dir + "/embeddings_bf16.bin";
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(table.data()), static_cast<std::streamsize>(table.size() * 2));
  if (!f) {
    std::fprintf(stderr, "gen_tool_model: could not write %s\n", path.c_str());
    return false;
  }
  return true;
}

bool parseInt(const char* s, long lo, long hi, int* out) {
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

bool parseChain(const std::string& text, int vocab, std::vector<std::pair<int, int>>* chain) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string link = text.substr(start, comma - start);
    const size_t colon = link.find(':');
    int from = 0, to = 0;
    if (colon == std::string::npos || !parseInt(link.substr(0, colon).c_str(), 0, vocab - 1, &from) ||
        !parseInt(link.substr(colon + 1).c_str(), 0, vocab - 1, &to))
      return false;
    chain->emplace_back(from, to);
    start = comma + 1;
  }
  return true;
}

// Checks what the graph relies on: ids in range, distinct openers and first tokens, one successor per chain token,
// and room for every chain token's dimension.
const char* invalid(const Spec& s) {
  if (s.vocab < 260) return "--vocab must be at least 260";
  for (int id : {s.user, s.tool, s.callFirst, s.finalFirst})
    if (id < 0 || id >= s.vocab) return "--user, --tool, --call-first and --final-first must be ids below --vocab";
  if (s.user == s.tool) return "--user and --tool must differ";
  if (s.callFirst == s.finalFirst) return "--call-first and --final-first must differ";
  if (s.chain.empty()) return "--chain must name at least one link";
  if (kFirstChainDim + static_cast<int>(s.chain.size()) > kHidden) return "--chain has more links than the model has room for";
  std::set<int> from;
  for (const auto& link : s.chain) {
    if (!from.insert(link.first).second) return "--chain names a token twice: each chain token has one successor";
    if (link.first == s.user || link.first == s.tool) return "--chain must not start a link at a turn opener";
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "usage: gen_tool_model OUT_DIR --vocab N --user ID --tool ID --call-first ID --final-first ID "
      "--chain A:B[,A:B...]\n";
  if (argc < 2 || argv[1][0] == '-') {
    std::fputs(usage, stderr);
    return 1;
  }
  Spec s;
  const std::string dir = argv[1];
  std::string chainText;
  for (int i = 2; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "gen_tool_model: %s needs a value\n%s", flag.c_str(), usage);
      return 1;
    }
    const char* value = argv[i + 1];
    bool ok = true;
    if (flag == "--vocab") ok = parseInt(value, 1, 1 << 20, &s.vocab);
    else if (flag == "--user") ok = parseInt(value, 0, 1 << 20, &s.user);
    else if (flag == "--tool") ok = parseInt(value, 0, 1 << 20, &s.tool);
    else if (flag == "--call-first") ok = parseInt(value, 0, 1 << 20, &s.callFirst);
    else if (flag == "--final-first") ok = parseInt(value, 0, 1 << 20, &s.finalFirst);
    else if (flag == "--chain") chainText = value;
    else {
      std::fprintf(stderr, "gen_tool_model: unknown option %s\n%s", flag.c_str(), usage);
      return 1;
    }
    if (!ok) {
      std::fprintf(stderr, "gen_tool_model: %s expects a non-negative integer, got %s\n", flag.c_str(), value);
      return 1;
    }
  }
  if (!parseChain(chainText, s.vocab, &s.chain)) {
    std::fprintf(stderr, "gen_tool_model: --chain expects FROM:TO[,FROM:TO...] with ids below --vocab\n");
    return 1;
  }
  if (const char* why = invalid(s)) {
    std::fprintf(stderr, "gen_tool_model: %s\n", why);
    return 1;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    std::fprintf(stderr, "gen_tool_model: cannot create %s: %s\n", dir.c_str(), ec.message().c_str());
    return 1;
  }
  if (!writeGraph(s, dir) || !writeEmbeddings(s, dir)) return 2;
  std::printf("gen_tool_model: wrote %s/llm.mnn and embeddings_bf16.bin (vocab %d, %zu chain links)\n", dir.c_str(),
              s.vocab, s.chain.size());
  return 0;
}
