// Defects of the MNN this release pins (agent/engine-build/plan.ts: PINNED_MNN_COMMIT) that the planner steers
// around. Each goes when the pin moves to an MNN that fixes it; docs/ENGINE.md has the runs that found it.

/**
 * MNN 4d40bdbd7's Arm82 fp16 CPU backend (precision 'low' on an arm64 CPU with fp16 arithmetic) corrupts the heap
 * during LLM decoding: with Electric Fence on MNN's own `Llm` API (no addon), a tiny-llm answer decoded on a second
 * thread stops in Arm82Backend::onCopyBuffer → MNNDequantizeFP16 writing the logits into a freed buffer, and without
 * the fence it surfaces later as a SIGSEGV in malloc. A product that crashes at random is slower than one that runs
 * fp32, so fp16 is not offered there by default.
 */
export const ARM82_FP16_FAULT =
  "MNN 4d40bdbd7's Arm82 fp16 kernels write an LLM's logits into freed memory (a heap corruption that crashes " +
  'the engine host at random; docs/ENGINE.md)';
