#include "llm_request.h"

#include <utility>

namespace mnn_edge {
std::string StringField(const Napi::Object& o, const char* name) {
  Napi::Value v = o.Get(name);
  return v.IsString() ? v.As<Napi::String>().Utf8Value() : std::string();
}

PrefillRequest ParsePrefill(Napi::Env env, const Napi::Object& req) {
  PrefillRequest r;
  Napi::Value messages = req.Get("messages");
  if (messages.IsArray()) {
    auto arr = messages.As<Napi::Array>();
    for (uint32_t i = 0; i < arr.Length(); ++i) {
      auto pair = arr.Get(i).As<Napi::Array>();
      r.messages.emplace_back(pair.Get(0u).As<Napi::String>().Utf8Value(),
                              pair.Get(1u).As<Napi::String>().Utf8Value());
    }
    r.useMessages = true;
  } else {
    r.text = StringField(req, "text");
  }
  r.applyTemplate = req.Get("applyTemplate").ToBoolean().Value();
  r.maxNewTokens = req.Get("maxNewTokens").As<Napi::Number>().Int32Value();
  r.reuse = !req.Get("reuse").IsBoolean() || req.Get("reuse").As<Napi::Boolean>().Value();
  r.mrope = req.Get("mrope").ToBoolean().Value();
  r.contextTokens = req.Get("contextTokens").IsNumber() ? req.Get("contextTokens").As<Napi::Number>().Int32Value() : 0;
  r.prefillChunk = req.Get("prefillChunk").IsNumber() ? req.Get("prefillChunk").As<Napi::Number>().Int32Value() : 0;
  if (r.prefillChunk < 0) r.prefillChunk = 0;
  Napi::Value images = req.Get("images");
  if (images.IsArray()) {
    auto arr = images.As<Napi::Array>();
    for (uint32_t i = 0; i < arr.Length(); ++i) {
      auto o = arr.Get(i).As<Napi::Object>();
      ImageRequest img;
      img.key = StringField(o, "key");
      img.path = StringField(o, "path");
      Napi::Value data = o.Get("data");
      if (data.IsTypedArray()) {
        auto bytes = data.As<Napi::Uint8Array>();
        img.rgb.assign(bytes.Data(), bytes.Data() + bytes.ElementLength());
        img.width = o.Get("width").As<Napi::Number>().Int32Value();
        img.height = o.Get("height").As<Napi::Number>().Int32Value();
      }
      r.images.push_back(std::move(img));
    }
  }
  Napi::Value audios = req.Get("audios");
  if (audios.IsArray()) {
    auto arr = audios.As<Napi::Array>();
    for (uint32_t i = 0; i < arr.Length(); ++i) {
      auto o = arr.Get(i).As<Napi::Object>();
      AudioRequest a;
      a.key = StringField(o, "key");
      a.path = StringField(o, "path");
      Napi::Value samples = o.Get("samples");
      if (samples.IsTypedArray()) {
        auto f = samples.As<Napi::Float32Array>();
        a.samples.assign(f.Data(), f.Data() + f.ElementLength());
        a.sampleRate = o.Get("sampleRate").As<Napi::Number>().Int32Value();
        a.hasSamples = true;
      }
      r.audios.push_back(std::move(a));
    }
  }
  (void)env;
  return r;
}

}  // namespace mnn_edge
