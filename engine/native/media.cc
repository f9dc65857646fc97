#include "media.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include <MNN/expr/NeuralNetWorkOp.hpp>

#include <cmath>
#include <cstring>
#include <string>

#include "common.h"

#ifdef MNN_EDGE_HAS_AUDIO
#include <audio/audio.hpp>
#endif
#ifdef MNN_EDGE_HAS_CV
#include <cv/imgcodecs.hpp>
#endif

namespace mnn_edge {

using MNN::Express::VARP;

bool FileExists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

int64_t ResidentBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  long long pages = 0, resident = 0;
  int n = std::fscanf(f, "%lld %lld", &pages, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<int64_t>(resident) * ::sysconf(_SC_PAGESIZE) : 0;
}

static void RequireFile(const std::string& kind, const std::string& path) {
  if (path.empty()) throw EngineError("EMEDIA", kind + " path is empty");
  if (!FileExists(path)) throw EngineError("ENOENT", kind + " file not found: " + path);
}

VARP LoadImageFile(const std::string& path) {
  RequireFile("image", path);
#ifdef MNN_EDGE_HAS_CV
  VARP image = MNN::CV::imread(path);
  auto* info = image.get() != nullptr ? image->getInfo() : nullptr;
  if (info == nullptr || info->dim.size() != 3 || info->dim[0] <= 0 || info->dim[1] <= 0) {
    throw EngineError("EMEDIA", "MNN::CV::imread could not decode image: " + path);
  }
  if (info->dim[0] > kMaxImageSide || info->dim[1] > kMaxImageSide) {
    throw EngineError("EMEDIA", "image too large (" + std::to_string(info->dim[1]) + "x" +
                                    std::to_string(info->dim[0]) + ", max side " + std::to_string(kMaxImageSide) +
                                    "): " + path);
  }
  return image;
#else
  throw EngineError("ENOTSUP", "this MNN install has no image codecs (cv/imgcodecs.hpp): cannot read " + path);
#endif
}

VARP ImageFromRgb(const std::vector<uint8_t>& rgb, int width, int height) {
  if (width <= 0 || height <= 0 || width > kMaxImageSide || height > kMaxImageSide) {
    throw EngineError("EMEDIA", "image size " + std::to_string(width) + "x" + std::to_string(height) +
                                    " is out of range (1.." + std::to_string(kMaxImageSide) + " per side)");
  }
  size_t expected = static_cast<size_t>(width) * static_cast<size_t>(height) * 3;
  if (rgb.size() != expected) {
    throw EngineError("EMEDIA", "RGB image buffer has " + std::to_string(rgb.size()) + " bytes but " +
                                    std::to_string(width) + "x" + std::to_string(height) + "x3 needs " +
                                    std::to_string(expected));
  }
  VARP image = MNN::Express::_Input({height, width, 3}, MNN::Express::NHWC, halide_type_of<uint8_t>());
  auto* dst = image->writeMap<uint8_t>();
  for (size_t p = 0; p < expected; p += 3) {
    dst[p] = rgb[p + 2];
    dst[p + 1] = rgb[p + 1];
    dst[p + 2] = rgb[p];
  }
  return image;
}

static void CheckSampleCount(size_t samples, const std::string& origin) {
  if (samples < kMinAudioSamples) {
    throw EngineError("EMEDIA", "audio too short: " + std::to_string(samples) + " samples at 16 kHz (" + origin +
                                    "); at least " + std::to_string(kMinAudioSamples) + " (10 ms) are needed");
  }
  if (samples > kMaxAudioSamples) {
    throw EngineError("EMEDIA", "audio too long: " + std::to_string(samples) + " samples at 16 kHz (" + origin +
                                    "); at most " + std::to_string(kMaxAudioSamples) + " (10 min)");
  }
}

static LoadedAudio CheckedAudio(VARP waveform, const std::string& origin) {
  size_t samples = static_cast<size_t>(waveform->getInfo()->size);
  CheckSampleCount(samples, origin);
  return LoadedAudio{waveform, static_cast<double>(samples) / kAudioSampleRate};
}

LoadedAudio LoadAudioFile(const std::string& path) {
  RequireFile("audio", path);
#ifdef MNN_EDGE_HAS_AUDIO
  auto loaded = MNN::AUDIO::load(path, kAudioSampleRate);
  if (loaded.first.get() == nullptr || loaded.first->getInfo() == nullptr) {
    throw EngineError("EMEDIA", "MNN::AUDIO::load could not decode audio (expected WAV PCM 8/16/32-bit or float): " +
                                    path);
  }
  return CheckedAudio(loaded.first, path);
#else
  throw EngineError("ENOTSUP", "this MNN install has no audio support (audio/audio.hpp): cannot read " + path);
#endif
}

LoadedAudio AudioFromPcm(const std::vector<float>& samples, int sampleRate) {
  if (sampleRate < 1000 || sampleRate > 384000) {
    throw EngineError("EMEDIA", "PCM sample rate " + std::to_string(sampleRate) + " is out of range (1000..384000)");
  }
  std::vector<float> resampled;
  const std::vector<float>* source = &samples;
  if (sampleRate != kAudioSampleRate && !samples.empty()) {
    // Linear interpolation, as MNN's own loader does for files.
    double ratio = static_cast<double>(sampleRate) / kAudioSampleRate;
    size_t outCount = static_cast<size_t>(std::floor(samples.size() / ratio));
    resampled.resize(outCount);
    for (size_t i = 0; i < outCount; ++i) {
      double pos = i * ratio;
      size_t lo = static_cast<size_t>(pos);
      size_t hi = lo + 1 < samples.size() ? lo + 1 : lo;
      double frac = pos - lo;
      resampled[i] = static_cast<float>(samples[lo] * (1.0 - frac) + samples[hi] * frac);
    }
    source = &resampled;
  }
  CheckSampleCount(source->size(), "PCM input");
  VARP waveform =
      MNN::Express::_Input({static_cast<int>(source->size())}, MNN::Express::NHWC, halide_type_of<float>());
  std::memcpy(waveform->writeMap<float>(), source->data(), source->size() * sizeof(float));
  return CheckedAudio(waveform, "PCM input");
}

}  // namespace mnn_edge
