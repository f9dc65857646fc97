// gen_tiny_talker: writes the graphs and binary tables of a random-weight Qwen2.5-Omni-style model with a talker,
// the smallest package MNN's Omni engine (transformers/llm/engine/src/omni.cpp) loads with has_talker set and
// turns into 24 kHz PCM. Test fixture only: the speech is noise-like, but every graph has the names and shapes
// the engine asks for, so the real load, talker decode, DiT and vocoder paths run. docs/TALKER.md has the
// contract this follows; make-tiny-talker.ts writes the JSON configs and the tokenizer beside these files.
//
// Usage: gen_tiny_talker OUT_DIR [--seed N]
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
#include <random>
#include <string>
#include <vector>

#include "MNN_generated.h"

using namespace MNN;
using namespace MNN::Express;

namespace {

// Sizes. The thinker and the talker share llm_config.json, so they share hidden_size (the engine sizes both
// embedding tables from it) and layer_nums (KV cache); they differ in vocabulary.
constexpr int kHidden = 64;
constexpr int kLayers = 2;
constexpr int kHeads = 4;
constexpr int kKvHeads = 2;
constexpr int kHeadDim = 16;
constexpr int kFfn = 128;
constexpr int kTextVocab = 512;          // the tokenizer copied from the tiny-llm fixture has 512 tokens
constexpr int kTextPadId = 151859;       // Talker::load embeds these Qwen2.5-Omni ids through the thinker's
constexpr int kTextEosId = 151861;       // embedding table (hard-coded in omni.hpp), so the table reaches them
constexpr int kCodecVocab = 8296;        // codec ids; 8292 pad (also an end), 8293 bos, 8294 end
constexpr int kSpokenCodes = 1024;       // the talker's lm_head favours these; the rest (ends included) get -30
constexpr int kMelBins = 80;             // DiT output / vocoder input channels
constexpr int kDitDim = 32;
constexpr int kSamplesPerMelFrame = 240; // Talker::vocoder_upsample_rate: 2 mel frames per code -> 480 samples
constexpr int kSpkDim = 16;

class Weights {
 public:
  explicit Weights(uint32_t seed) : rng_(seed) {}
  // Uniform in [-scale, scale) from the raw 32-bit draws, so the bytes do not depend on the C++ library.
  std::vector<float> uniform(size_t n, float scale) {
    std::vector<float> v(n);
    for (auto& x : v) x = static_cast<float>((static_cast<double>(rng_()) / 4294967296.0 * 2.0 - 1.0) * scale);
    return v;
  }

 private:
  std::mt19937 rng_;
};

VARP constant(const std::vector<float>& v, const std::vector<int>& shape) {
  return _Const(v.data(), shape, NCHW, halide_type_of<float>());
}

VARP intConstant(const std::vector<int>& v) {
  return _Const(v.data(), {static_cast<int>(v.size())}, NCHW, halide_type_of<int>());
}

// x [..., in] -> [1, -1, out] through a plain MatMul with a [in, out] weight.
VARP dense(Weights& w, VARP x, int in, int out, const std::vector<float>* bias = nullptr) {
  auto weight = constant(w.uniform(static_cast<size_t>(in) * out, std::sqrt(3.0f / in)), {in, out});
  auto y = _MatMul(_Reshape(x, {-1, in}), weight);
  if (bias != nullptr) y = y + constant(*bias, {out});
  return _Reshape(y, {1, -1, out});
}

VARP rmsNorm(Weights& w, VARP x, int dim) {
  auto gain = w.uniform(dim, 0.1f);
  for (auto& g : gain) g += 1.0f;
  return x * _Rsqrt(_ReduceMean(_Square(x), {-1}, true) + _Scalar<float>(1e-6f)) * constant(gain, {dim});
}

// cos and sin tables [1, seq, 1, headDim] for rotary embedding from positions [seq].
std::pair<VARP, VARP> rotaryTables(VARP positions) {
  const int half = kHeadDim / 2;
  std::vector<float> inv(half);
  for (int i = 0; i < half; ++i) inv[i] = std::pow(10000.0f, -2.0f * i / kHeadDim);
  auto angles = _Reshape(_Cast<float>(positions), {-1, 1}) * constant(inv, {1, half});
  auto full = _Concat({angles, angles}, -1);
  return {_Reshape(_Cos(full), {1, -1, 1, kHeadDim}), _Reshape(_Sin(full), {1, -1, 1, kHeadDim})};
}

VARP rotate(VARP x, const std::pair<VARP, VARP>& tables) {
  auto halves = _Split(x, {kHeadDim / 2, kHeadDim / 2}, 3);
  return x * tables.first + _Concat({_Negative(halves[1]), halves[0]}, 3) * tables.second;
}

// MNN's fused attention with the KV cache kept inside the op (the LLM engine drives it through its KVMeta).
VARP cachedAttention(VARP q, VARP k, VARP v, VARP mask, int layer, const std::string& scope) {
  std::unique_ptr<OpT> op(new OpT);
  op->type = OpType_Attention;
  op->name = scope + "/layer" + std::to_string(layer) + "/attention";
  op->main.type = OpParameter_AttentionParam;
  op->main.value = new AttentionParamT;
  op->main.AsAttentionParam()->kv_cache = true;
  op->main.AsAttentionParam()->layer_index = layer;
  return Variable::create(Expr::create(op.get(), {q, k, v, mask}));
}

// Pre-norm decoder stack on x [1, seq, hidden]; returns the final-normed hidden states.
VARP decoder(Weights& w, VARP x, VARP positions, VARP mask, const std::string& scope) {
  auto tables = rotaryTables(positions);
  for (int l = 0; l < kLayers; ++l) {
    auto h = rmsNorm(w, x, kHidden);
    auto q = _Reshape(dense(w, h, kHidden, kHeads * kHeadDim), {1, -1, kHeads, kHeadDim});
    auto k = _Reshape(dense(w, h, kHidden, kKvHeads * kHeadDim), {1, -1, kKvHeads, kHeadDim});
    auto v = _Reshape(dense(w, h, kHidden, kKvHeads * kHeadDim), {1, -1, kKvHeads, kHeadDim});
    auto attended = cachedAttention(rotate(q, tables), rotate(k, tables), v, mask, l, scope);
    x = x + dense(w, attended, kHeads * kHeadDim, kHidden);
    h = rmsNorm(w, x, kHidden);
    auto gated = _Silu(dense(w, h, kHidden, kFfn)) * dense(w, h, kHidden, kFfn);
    x = x + dense(w, gated, kFfn, kHidden);
  }
  return rmsNorm(w, x, kHidden);
}

// hidden[:, logits_index:, :] (-1: the last position, 0: all), as the engine's logits_index asks.
VARP fromLogitsIndex(VARP hidden, VARP logitsIndex) {
  auto begin = _Concat({intConstant({0}), logitsIndex, intConstant({0})}, 0);
  return _StridedSlice(hidden, begin, intConstant({0, 0, 0}), intConstant({1, 1, 1}), 5, 7, 0, 0, 0);
}

// Row 0 of MRoPE position ids ([3, seq] or [3, 1, seq]): text-only prompts have three equal rows.
VARP temporalRow(VARP positionIds) { return _Reshape(_Split(positionIds, {1, 1, 1}, 0)[0], {-1}); }

bool save(const std::vector<VARP>& outputs, const std::string& path) {
  Variable::save(outputs, path.c_str());
  if (!std::filesystem::exists(path)) {
    std::fprintf(stderr, "gen_tiny_talker: could not write %s\n", path.c_str());
    return false;
  }
  return true;
}

// llm.mnn: the thinker. Besides logits it returns talker_embeds (Llm::load asks for that output when has_talker
// is set), and its position_ids input is [3, seq]: Omni hands its position list to the talker only on the MRoPE
// path, which it picks from that input's first dimension.
bool writeThinker(uint32_t seed, const std::string& dir) {
  Weights w(seed);
  auto embeds = _Input({4, 1, kHidden}, NCHW, halide_type_of<float>());
  embeds->setName("input_ids");
  auto mask = _Input({}, NCHW, halide_type_of<float>());
  mask->setName("attention_mask");
  auto positions = _Input({3, 4}, NCHW, halide_type_of<int>());
  positions->setName("position_ids");
  auto logitsIndex = _Input({1}, NCHW, halide_type_of<int>());
  logitsIndex->setName("logits_index");

  auto hidden = decoder(w, _Reshape(embeds, {1, -1, kHidden}), temporalRow(positions), mask, "thinker");
  auto talkerEmbeds = _Reshape(hidden, {1, -1, kHidden});
  talkerEmbeds->setName("talker_embeds");
  // Printable bytes, newline and <|im_end|> (258) stay open so the text decodes; everything else is held down.
  std::vector<float> bias(kTextVocab, -30.0f);
  for (int t = 32; t < 127; ++t) bias[t] = 0.0f;
  bias['\n'] = 0.0f;
  bias[258] = 0.0f;
  for (int t = 262; t < kTextVocab; ++t) bias[t] = 0.0f;
  auto logits = dense(w, fromLogitsIndex(hidden, logitsIndex), kHidden, kTextVocab, &bias);
  logits->setName("logits");
  const std::string path = dir + "/llm.mnn";
  if (!save({logits, talkerEmbeds}, path)) return false;
  // The engine opens llm_weight even when every weight is inline.
  std::ofstream(path + ".weight", std::ios::binary | std::ios::trunc);
  return true;
}

// talker.mnn: the codec-token LLM. inputs_embeds [1, seq, hidden], position_ids [3, 1, seq] (Talker's own
// gen_position_ids) -> logits [1, 1, codec vocabulary] of the last position.
bool writeTalker(uint32_t seed, const std::string& dir) {
  Weights w(seed);
  auto embeds = _Input({1, 4, kHidden}, NCHW, halide_type_of<float>());
  embeds->setName("inputs_embeds");
  auto mask = _Input({}, NCHW, halide_type_of<float>());
  mask->setName("attention_mask");
  auto positions = _Input({3, 1, 4}, NCHW, halide_type_of<int>());
  positions->setName("position_ids");
  // No logits_index input: Talker::load never sets the logits-index variables that Llm::load sets, so the engine
  // passes a null variable in that slot, which MNN's module skips only when the graph has no such input. Every
  // talker call samples the last position anyway.
  auto hidden = decoder(w, _Reshape(embeds, {1, -1, kHidden}), temporalRow(positions), mask, "talker");
  // The end codes are held down: the utterance length is then talker_max_new_tokens, which the tests rely on.
  std::vector<float> bias(kCodecVocab, -30.0f);
  for (int t = 0; t < kSpokenCodes; ++t) bias[t] = 0.0f;
  auto logits = dense(w, fromLogitsIndex(hidden, intConstant({-1})), kHidden, kCodecVocab, &bias);
  logits->setName("logits");
  return save({logits}, dir + "/talker.mnn");
}

// predit.mnn: (cond, spk, code [1, n]) -> code_embeds [1, 2n, dit], rope [2n, dit], mask [1, 2n]. Only dit.mnn
// reads these three, so their inner shapes are this package's choice; 2 mel frames per code is the engine's.
bool writePreDit(uint32_t seed, const std::string& dir) {
  Weights w(seed);
  auto cond = _Input({1, kMelBins}, NCHW, halide_type_of<float>());
  cond->setName("cond");
  auto spk = _Input({1, kSpkDim}, NCHW, halide_type_of<float>());
  spk->setName("spk");
  auto code = _Input({1, 8}, NCHW, halide_type_of<int>());
  code->setName("code");

  auto table = constant(w.uniform(static_cast<size_t>(kCodecVocab) * kDitDim, 1.0f), {kCodecVocab, kDitDim});
  auto perCode = _Unsqueeze(_GatherV2(table, _Reshape(code, {-1}), _Scalar<int>(0)), {1});  // [n, 1, dit]
  auto perFrame = _Reshape(_Concat({perCode, perCode}, 1), {1, -1, kDitDim});                  // [1, 2n, dit]
  auto codeEmbeds = perFrame + dense(w, spk, kSpkDim, kDitDim) + dense(w, cond, kMelBins, kDitDim);
  codeEmbeds->setName("code_embeds");

  auto frames = _Squeeze(_Slice(_Shape(perFrame, true), intConstant({1}), intConstant({1})), {0});
  auto frameIndex = _Cast<float>(_Range(_Scalar<int>(0), frames, _Scalar<int>(1)));          // [2n]
  std::vector<float> freq(kDitDim);
  for (int i = 0; i < kDitDim; ++i) freq[i] = std::pow(100.0f, -static_cast<float>(i) / kDitDim);
  auto rope = _Sin(_Reshape(frameIndex, {-1, 1}) * constant(freq, {1, kDitDim}));
  rope->setName("rope");
  auto mask = _Reshape(_Cast<float>(_GreaterEqual(frameIndex, _Scalar<float>(0.0f))), {1, -1});
  mask->setName("mask");
  return save({codeEmbeds, rope, mask}, dir + "/predit.mnn");
}

// dit.mnn: one flow-matching velocity step, (x [1, T, 80], code_embeds, rope, mask, time [1]) -> mel [1, T, 80];
// Talker integrates it over dit_steps.
bool writeDit(uint32_t seed, const std::string& dir) {
  Weights w(seed);
  auto x = _Input({1, 8, kMelBins}, NCHW, halide_type_of<float>());
  x->setName("x");
  auto codeEmbeds = _Input({1, 8, kDitDim}, NCHW, halide_type_of<float>());
  codeEmbeds->setName("code_embeds");
  auto rope = _Input({8, kDitDim}, NCHW, halide_type_of<float>());
  rope->setName("rope");
  auto mask = _Input({1, 8}, NCHW, halide_type_of<float>());
  mask->setName("mask");
  auto time = _Input({1}, NCHW, halide_type_of<float>());
  time->setName("time");

  auto timeScale = constant(w.uniform(kDitDim, 1.0f), {kDitDim});
  auto h = dense(w, x, kMelBins, kDitDim) + codeEmbeds + _Unsqueeze(rope, {0}) * _Scalar<float>(0.5f) +
           _Reshape(time, {1, 1, 1}) * timeScale;
  h = _Silu(dense(w, _Tanh(h), kDitDim, kDitDim));
  auto velocity = dense(w, h, kDitDim, kMelBins) * _Reshape(mask, {1, -1, 1});
  velocity->setName("mel");
  return save({velocity}, dir + "/dit.mnn");
}

// bigvgan.mnn: generated_mel [1, 80, T] -> waveform [1, T * 240], samples within (-0.5, 0.5).
bool writeVocoder(uint32_t seed, const std::string& dir) {
  Weights w(seed);
  auto mel = _Input({1, kMelBins, 8}, NCHW, halide_type_of<float>());
  mel->setName("generated_mel");
  auto frames = _Transpose(mel, {0, 2, 1});
  auto h = _Tanh(dense(w, frames, kMelBins, kHidden));
  auto samples = _Tanh(dense(w, h, kHidden, kSamplesPerMelFrame)) * _Scalar<float>(0.5f);
  auto waveform = _Reshape(samples, {1, -1});
  waveform->setName("waveform");
  return save({waveform}, dir + "/bigvgan.mnn");
}

// spk_dict.mnn: per voice <name>_spk, <name>_cond (predit's inputs) and <name>_bos_token (a thinker token id,
// stored as float, that Talker embeds as the text-side BOS).
bool writeSpeakers(uint32_t seed, const std::string& dir) {
  Weights w(seed);
  std::vector<VARP> vars;
  const char* voices[] = {"Chelsie", "Ethan"};
  for (const char* voice : voices) {
    auto spk = constant(w.uniform(kSpkDim, 1.0f), {1, kSpkDim});
    spk->setName(std::string(voice) + "_spk");
    auto cond = constant(w.uniform(kMelBins, 1.0f), {1, kMelBins});
    cond->setName(std::string(voice) + "_cond");
    auto bos = constant({257.0f}, {1});  // <|im_start|>
    bos->setName(std::string(voice) + "_bos_token");
    vars.insert(vars.end(), {spk, cond, bos});
  }
  return save(vars, dir + "/spk_dict.mnn");
}

void writeBf16Row(std::ofstream& f, const std::vector<float>& row) {
  for (float v : row) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    const uint16_t upper = static_cast<uint16_t>(bits >> 16);
    f.write(reinterpret_cast<const char*>(&upper), sizeof upper);
  }
}

// Row-major bf16 [rows, hidden], no header: the engine's embeddings_bf16.bin layout. Rows not listed in `rows`
// are left as a hole (zeros, sparse on disk): the thinker's table must reach the ids Talker::load embeds.
bool writeEmbeddings(uint32_t seed, const std::string& path, int totalRows, const std::vector<int>& rows) {
  Weights w(seed);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) {
    std::fprintf(stderr, "gen_tiny_talker: could not write %s\n", path.c_str());
    return false;
  }
  const std::streamoff rowBytes = static_cast<std::streamoff>(kHidden) * 2;
  for (int row : rows) {
    f.seekp(row * rowBytes);
    writeBf16Row(f, w.uniform(kHidden, 1.0f));
  }
  f.seekp(static_cast<std::streamoff>(totalRows) * rowBytes - 1);
  f.put('\0');
  return static_cast<bool>(f);
}

bool parseSeed(const char* s, uint32_t* out) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (end == s || *end != '\0' || v > 0xffffffffULL) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') {
    std::fprintf(stderr, "usage: %s OUT_DIR [--seed N]\n", argv[0]);
    return 1;
  }
  const std::string dir = argv[1];
  uint32_t seed = 20261201;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--seed") == 0 && i + 1 < argc && parseSeed(argv[i + 1], &seed)) {
      ++i;
      continue;
    }
    std::fprintf(stderr, "gen_tiny_talker: unknown or malformed option %s (usage: OUT_DIR [--seed N])\n", argv[i]);
    return 1;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    std::fprintf(stderr, "gen_tiny_talker: cannot create %s: %s\n", dir.c_str(), ec.message().c_str());
    return 1;
  }
  std::vector<int> textRows;
  for (int t = 0; t < kTextVocab; ++t) textRows.push_back(t);
  textRows.push_back(kTextPadId);
  textRows.push_back(kTextEosId);
  std::vector<int> codecRows;
  for (int t = 0; t < kCodecVocab; ++t) codecRows.push_back(t);
  // Each part draws from its own stream, so changing one leaves the others' bytes alone.
  const bool ok = writeThinker(seed, dir) && writeTalker(seed + 1, dir) && writePreDit(seed + 2, dir) &&
                  writeDit(seed + 3, dir) && writeVocoder(seed + 4, dir) && writeSpeakers(seed + 5, dir) &&
                  writeEmbeddings(seed + 6, dir + "/embeddings_bf16.bin", kTextEosId + 1, textRows) &&
                  writeEmbeddings(seed + 7, dir + "/talker_embeddings_bf16.bin", kCodecVocab, codecRows);
  if (!ok) return 2;
  std::printf("gen_tiny_talker: wrote %s (seed %u)\n", dir.c_str(), seed);
  return 0;
}
