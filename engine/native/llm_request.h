// A generation's request: what generate() reads from its JS object on the JS thread (the prompt as text or chat
// messages, its images and audio, the reuse settings) for the decode thread to use (llm_generate.cc).
#pragma once

#include <napi.h>

#include <llm/llm.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "media.h"

namespace mnn_edge {
struct ImageRequest {
  std::string key;
  std::string path;
  std::vector<uint8_t> rgb;
  int width = 0;
  int height = 0;
};

struct AudioRequest {
  std::string key;
  std::string path;
  std::vector<float> samples;
  int sampleRate = kAudioSampleRate;
  bool hasSamples = false;
};

// A generation's input, read from JS on the JS thread, used on the decode thread.
struct PrefillRequest {
  std::string text;
  MNN::Transformer::ChatMessages messages;
  bool useMessages = false;
  bool applyTemplate = true;
  int maxNewTokens = 0;
  // Keep the KV of the prompt's common prefix with what the Llm holds (false: prefill all of it).
  bool reuse = true;
  // Multimodal RoPE: positions after a media part are not token indices, so no prefix is kept with media.
  bool mrope = false;
  // The model's context in tokens (0: unknown); a longer prompt is refused the same way with or without reuse.
  int contextTokens = 0;
  // MNN's prefill chunk in tokens (its config's `chunk`; 0: none): kept KV ends on a multiple of it (AlignToChunk).
  int prefillChunk = 0;
  std::vector<ImageRequest> images;
  std::vector<AudioRequest> audios;
};

// A string property of a JS options object; "" when it is missing or not a string (the handle's calls that take
// an object read their optional text fields with it).
std::string StringField(const Napi::Object& o, const char* name);

PrefillRequest ParsePrefill(Napi::Env env, const Napi::Object& req);

}  // namespace mnn_edge
