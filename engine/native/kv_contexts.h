// KvContexts: the conversation contexts of one model instance, so that conversations that interleave on it
// (voice, Wyoming and the OpenAI API on one slot) each keep their prefix.
//
// A "snapshot" here is a context of its own, not a copy: MNN (at the pinned commit) has no call that copies a KV
// cache out of an Llm or back in; its KV lives inside the attention executions. What it has is
// Llm::create_lora, which loads a second Llm on the same graph whose matmul executions are clones of the first
// one's (the weights are shared, not loaded again) while its attention ops keep a KV cache of their own. Each
// extra context is one of those. Its disk prefix cache (Llm::setPrefixCacheFile) is no substitute: it needs
// kvcache_mmap (every KV on disk-backed mmap), writes only the KV of a prefill that starts from an empty cache,
// and loads it only in the call right after it is set, so it cannot follow a conversation turn by turn.
//
// Routing: a prompt that continues what a context holds (its whole held prompt, or a prompt that is a prefix of
// it: a regenerated answer) goes to that context; any other prompt is a new conversation (or an edited one) and
// goes to a new context while the count and the byte budget allow, else it takes over the least recently used
// context, whose conversation is then evicted. Outputs never depend on the route: each context's plan keeps
// only KV that is exactly what a full prefill would compute.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "prefix_reuse.h"

namespace MNN {
namespace Transformer {
class Llm;
}
}  // namespace MNN

namespace mnn_edge {

struct KvContext {
  MNN::Transformer::Llm* llm = nullptr;
  HeldPrefix held;
  uint64_t lastUse = 0;
  // Resident growth measured when the context was made (its graph and execution buffers; the KV comes on top).
  // 0 for the instance's own context, whose memory the planner counts with the model.
  int64_t baseBytes = 0;
};

struct ContextRoute {
  // The context to run on; == count(): a new one is to be made (then `plan` is a cold miss).
  size_t index = 0;
  ReusePlan plan;
  // "own": it continues the conversation the context holds; "new": a context of its own; "lru": it took over the
  // least recently used context; "only": one context (snapshots off, or a model they do not apply to).
  std::string route = "only";
};

class KvContexts {
 public:
  // How many prompt ids of evicted conversations are remembered, so that a return to one says "evicted".
  static constexpr size_t kEvictedMemory = 8;

  void Init(MNN::Transformer::Llm* primary) {
    all_.clear();
    KvContext c;
    c.llm = primary;
    all_.push_back(std::move(c));
  }
  // `max`: contexts in all, the instance's own included (1: snapshots off); `budgetBytes`: what the extra ones may
  // hold together; `kvBytesPerToken`: one token's KV (all layers, K and V) as this build stores it.
  void SetLimits(size_t max, int64_t budgetBytes, int64_t kvBytesPerToken) {
    max_ = max < 1 ? 1 : max;
    budget_ = budgetBytes < 0 ? 0 : budgetBytes;
    kvPerToken_ = kvBytesPerToken < 0 ? 0 : kvBytesPerToken;
  }
  size_t max() const { return max_; }
  int64_t budget() const { return budget_; }
  size_t count() const { return all_.size(); }
  KvContext& at(size_t i) { return all_[i]; }
  const KvContext& at(size_t i) const { return all_[i]; }

  // Bytes the extra contexts hold: what each took to make plus its KV.
  int64_t SnapshotBytes() const {
    int64_t sum = 0;
    for (size_t i = 1; i < all_.size(); ++i) sum += BytesOf(all_[i]);
    return sum;
  }
  int64_t BytesOf(const KvContext& c) const { return c.baseBytes + kvPerToken_ * static_cast<int64_t>(c.held.size()); }

  ContextRoute Route(const std::vector<int>& ids, size_t cap, const std::string& capReason) const {
    ContextRoute r;
    if (max_ <= 1 && all_.size() == 1) {
      r.index = 0;
      r.plan = all_[0].held.Plan(ids, cap, capReason);
      return r;
    }
    // The context whose held prompt this one continues, the longest match first, then the most recent.
    size_t best = all_.size();
    size_t bestLcp = 0;
    for (size_t i = 0; i < all_.size(); ++i) {
      size_t lcp = 0;
      if (!all_[i].held.Continues(ids, &lcp)) continue;
      if (best == all_.size() || lcp > bestLcp || (lcp == bestLcp && all_[i].lastUse > all_[best].lastUse)) {
        best = i;
        bestLcp = lcp;
      }
    }
    if (best < all_.size()) {
      r.index = best;
      r.route = "own";
      r.plan = all_[best].held.Plan(ids, cap, capReason);
      return r;
    }
    size_t empty = Empty();
    if (empty < all_.size()) {
      // A context that holds nothing (the instance's own before its first turn, or after a reset).
      r.index = empty;
      r.route = "new";
      r.plan = all_[empty].held.Plan(ids, cap, capReason);
    } else if (all_.size() < max_ && Fits(ids.size())) {
      r.index = all_.size();
      r.route = "new";
      r.plan = HeldPrefix().Plan(ids, cap, capReason);
    } else {
      r.index = LeastRecent();
      r.route = "lru";
      r.plan = all_[r.index].held.Plan(ids, cap, capReason);
    }
    // Not a continuation of a live context: if it continues an evicted one, that is why it was not kept.
    if (r.plan.outcome != "hit" && ContinuesEvicted(ids)) r.plan.reason = "evicted";
    return r;
  }

  // Whether one more context fits the count and the budget (an empty one: what the last one took to make).
  bool RoomForAnother() const { return all_.size() < max_ && Fits(0); }

  // A context made for a route "new" (its Llm and what making it cost).
  size_t Add(MNN::Transformer::Llm* llm, int64_t baseBytes) {
    KvContext c;
    c.llm = llm;
    c.baseBytes = baseBytes < 0 ? 0 : baseBytes;
    lastBaseBytes_ = c.baseBytes;
    all_.push_back(std::move(c));
    return all_.size() - 1;
  }

  // The conversation held at `i` is given up (its context is taken over, or dropped).
  void Evict(size_t i) {
    const HeldPrefix& h = all_[i].held;
    if (h.matchable() == 0) return;
    evicted_.push_back(h.Prompt());
    if (evicted_.size() > kEvictedMemory) evicted_.pop_front();
    ++evictions_;
  }

  void Touch(size_t i) { all_[i].lastUse = ++clock_; }

  // Extra contexts to drop so that the rest fit the count and the budget, least recently used first; `keep` (the
  // one that just ran, whose stats are still to be read) only if `dropKeep`. The caller destroys their Llms.
  std::vector<size_t> OverLimit(size_t keep, bool dropKeep) const {
    std::vector<size_t> out;
    int64_t bytes = SnapshotBytes();
    size_t n = all_.size();
    std::vector<bool> gone(all_.size(), false);
    for (;;) {
      if (n <= max_ && bytes <= budget_) break;
      size_t victim = all_.size();
      for (size_t i = 1; i < all_.size(); ++i) {
        if (gone[i] || i == keep) continue;
        if (victim == all_.size() || all_[i].lastUse < all_[victim].lastUse) victim = i;
      }
      if (victim == all_.size()) {
        // Only `keep` is left over the budget: it goes too when allowed, unless it is the instance's own.
        if (!dropKeep || keep == 0 || keep >= all_.size() || gone[keep]) break;
        victim = keep;
      }
      gone[victim] = true;
      out.push_back(victim);
      bytes -= BytesOf(all_[victim]);
      --n;
    }
    return out;
  }

  // Removes extra context `i` from the table (after Evict; its Llm is the caller's to destroy).
  MNN::Transformer::Llm* Remove(size_t i) {
    MNN::Transformer::Llm* llm = all_[i].llm;
    all_.erase(all_.begin() + static_cast<std::ptrdiff_t>(i));
    return llm;
  }

  uint64_t evictions() const { return evictions_; }

 private:
  bool Fits(size_t promptTokens) const {
    int64_t estimate = lastBaseBytes_ + kvPerToken_ * static_cast<int64_t>(promptTokens);
    return SnapshotBytes() + estimate <= budget_;
  }
  size_t Empty() const {
    for (size_t i = 0; i < all_.size(); ++i) {
      if (all_[i].held.size() == 0) return i;
    }
    return all_.size();
  }
  size_t LeastRecent() const {
    size_t victim = 0;
    for (size_t i = 1; i < all_.size(); ++i) {
      if (all_[i].lastUse < all_[victim].lastUse) victim = i;
    }
    return victim;
  }
  bool ContinuesEvicted(const std::vector<int>& ids) const {
    for (const auto& prompt : evicted_) {
      if (prompt.size() <= ids.size() && std::equal(prompt.begin(), prompt.end(), ids.begin())) return true;
    }
    return false;
  }

  std::vector<KvContext> all_;
  std::deque<std::vector<int>> evicted_;
  size_t max_ = 1;
  int64_t budget_ = 0;
  int64_t kvPerToken_ = 0;
  int64_t lastBaseBytes_ = 0;
  uint64_t clock_ = 0;
  uint64_t evictions_ = 0;
};

}  // namespace mnn_edge
