// Media checked before MNN sees it. MNN drops a missing image or audio file from the prompt without an error,
// and crashes (SIGSEGV in the omni audio path) on clips shorter than one fbank hop; here both become errors.
#pragma once

#include <MNN/expr/Expr.hpp>

#include <string>
#include <vector>

namespace mnn_edge {

// The omni audio path needs at least one 10 ms whisper frame at 16 kHz; fewer samples crash MNN.
constexpr size_t kMinAudioSamples = 160;
constexpr int kAudioSampleRate = 16000;
// Beyond this MNN truncates the features anyway (30 s); refuse clearly absurd inputs before decoding them.
constexpr size_t kMaxAudioSamples = static_cast<size_t>(kAudioSampleRate) * 60 * 10;
constexpr int kMaxImageSide = 16384;

struct LoadedAudio {
  MNN::Express::VARP waveform;  // float32 [samples], 16 kHz mono
  double seconds = 0;
};

// Decodes an image file into the BGR uint8 HWC layout that MNN's imread produces and Omni expects.
MNN::Express::VARP LoadImageFile(const std::string& path);
// Wraps caller-decoded RGB bytes (HWC, 3 channels) as the BGR image Omni expects.
MNN::Express::VARP ImageFromRgb(const std::vector<uint8_t>& rgb, int width, int height);
// Reads a WAV (PCM 8/16/32-bit or float32, any rate, first channel) and resamples to 16 kHz.
LoadedAudio LoadAudioFile(const std::string& path);
// Caller PCM: mono float samples at `sampleRate`, resampled linearly to 16 kHz when needed.
LoadedAudio AudioFromPcm(const std::vector<float>& samples, int sampleRate);

}  // namespace mnn_edge
