// HeldPrefix: the token ids whose KV an Llm currently holds, and how much of a new prompt may keep that KV.
// A conversation sends its whole history every turn; the KV of the longest common token prefix is kept and only
// the rest is prefilled. Tokens are compared, not text: a re-tokenized answer that differs from the tokens the
// model generated breaks the prefix there, which costs a longer prefill but never a wrong answer.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace mnn_edge {

// What a generation did with the held KV (reported in its stats).
struct ReusePlan {
  // Prompt tokens whose KV is kept; the prompt's tokens from `keep` on are prefilled.
  size_t keep = 0;
  // "hit": everything the KV held was reused; "partial": a prefix of it; "miss": nothing.
  std::string outcome = "miss";
  // Why not all of it (empty for a hit): "cold", "disabled", "diverged", "media", "regenerate", "chunk" (all that
  // was held lies before the first chunk boundary, see AlignToChunk).
  // A hit keeps the whole held prompt; the previous answer's tokens are always prefilled again.
  std::string reason;
  // Tokens the KV held before this generation.
  size_t held = 0;
};

// With MNN's `chunk` set, a prefill runs in pieces of `chunk` tokens counted from where that prefill starts, and on
// MNN's Arm82 fp16 backend with quantized weights a token's result depends on the piece it was computed in (the
// activations are quantized over the tokens prefilled together). Kept KV that ends on a multiple of `chunk` makes
// the rest of a reused prefill run the same pieces at the same positions as a whole prefill of the prompt, so both
// compute the same KV and the same logits; the cost is prefilling again up to `chunk` - 1 held tokens. A hit that
// lost only those tokens stays a hit: it keeps all the KV that can be kept exactly. 0: no alignment.
inline void AlignToChunk(ReusePlan* p, size_t chunk) {
  if (chunk == 0 || p->keep % chunk == 0) return;
  p->keep -= p->keep % chunk;
  if (p->keep == 0) {
    p->outcome = "miss";
    if (p->reason.empty()) p->reason = "chunk";
  }
}

class HeldPrefix {
 public:
  // At least this many prompt tokens are prefilled: a one-token prefill takes MNN's decode path, whose results on
  // int4 weights differ in the last bits from a batched prefill's, enough to change a greedy answer (measured with
  // tiny-llm-int4 regenerating an answer); two or more take the batched path, as a full prefill does.
  static constexpr size_t kMinPrefill = 2;

  // `ids`: the new prompt's tokens; `cap`: at most this many may be kept (the first media token: MNN assigns
  // encoder outputs to a prefill in prompt order, so media in a kept prefix could not be skipped); `capReason`
  // says why the cap is below the prompt's length.
  ReusePlan Plan(const std::vector<int>& ids, size_t cap, const std::string& capReason) const {
    ReusePlan p;
    p.held = ids_.size();
    size_t n = matchable_ < ids.size() ? matchable_ : ids.size();
    size_t lcp = 0;
    while (lcp < n && ids_[lcp] == ids[lcp]) ++lcp;
    p.keep = lcp;
    if (p.keep + kMinPrefill > ids.size()) {
      // The whole prompt is held (a regenerated answer): its last tokens are prefilled again for their logits.
      p.keep = ids.size() > kMinPrefill ? ids.size() - kMinPrefill : 0;
      p.reason = "regenerate";
    }
    if (p.keep >= cap && cap < ids.size()) {
      p.keep = cap;
      p.reason = capReason;
    }
    if (ids_.empty() && p.reason != "disabled") {
      p.reason = "cold";
    } else if (p.reason.empty() && p.keep < matchable_) {
      p.reason = "diverged";
    }
    if (p.keep == 0) {
      p.outcome = "miss";
      if (p.reason.empty()) p.reason = "diverged";
    } else {
      // A hit keeps all the KV that can be kept: the held prompt (not the answer after it, see KeepHeld).
      p.outcome = p.reason.empty() ? "hit" : "partial";
    }
    return p;
  }

  // After a generation: the KV holds `ids` (prompt, then the generated tokens that were forwarded); only the
  // first `matchable` of them may match a later prompt (the part before the first media token).
  void Set(std::vector<int> ids, size_t matchable) {
    ids_ = std::move(ids);
    matchable_ = matchable < ids_.size() ? matchable : ids_.size();
  }
  // The KV was dropped beyond `n` tokens (eraseHistory(n, 0)).
  void Truncate(size_t n) {
    if (n < ids_.size()) ids_.resize(n);
    if (matchable_ > ids_.size()) matchable_ = ids_.size();
  }
  // What the KV holds is unknown or no longer a prompt's (an error, reset, a spoken text): nothing matches.
  void Clear() {
    ids_.clear();
    matchable_ = 0;
  }
  size_t size() const { return ids_.size(); }
  size_t matchable() const { return matchable_; }
  // The held prompt (the part a later prompt may match).
  std::vector<int> Prompt() const { return std::vector<int>(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(matchable_)); }
  // Whether `ids` continues the conversation held here: it holds all of the held prompt (a next turn, a barge-in
  // that cut the answer) or is itself a prefix of it (a regenerated answer). `lcp` gets the common length.
  bool Continues(const std::vector<int>& ids, size_t* lcp) const {
    size_t n = matchable_ < ids.size() ? matchable_ : ids.size();
    size_t k = 0;
    while (k < n && ids_[k] == ids[k]) ++k;
    *lcp = k;
    return matchable_ > 0 && (k == matchable_ || k == ids.size());
  }

 private:
  std::vector<int> ids_;
  size_t matchable_ = 0;
};

}  // namespace mnn_edge
