// Shared pieces of the addon: the error shape that crosses into JS, a generic AsyncWorker that runs one MNN
// call on libuv's pool, and the guard that keeps one MNN object from being driven by two threads at once.
#pragma once

#include <napi.h>

#include <atomic>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>

namespace mnn_edge {

// An error raised on a worker thread; `code` becomes err.code in JS so callers can match without parsing text.
class EngineError : public std::runtime_error {
 public:
  EngineError(std::string code, const std::string& message) : std::runtime_error(message), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

inline Napi::Error MakeJsError(Napi::Env env, const std::string& code, const std::string& message) {
  Napi::Error err = Napi::Error::New(env, message);
  err.Set("code", Napi::String::New(env, code));
  return err;
}

[[noreturn]] inline void ThrowJs(Napi::Env env, const std::string& code, const std::string& message) {
  throw MakeJsError(env, code, message);
}

// Marks an MNN object as in use for the lifetime of one call; a second concurrent call is refused instead of
// racing inside MNN (its objects are not thread-safe). The JS layer queues calls, so this is a safety net.
class BusyFlag {
 public:
  bool TryAcquire() {
    bool expected = false;
    return busy_.compare_exchange_strong(expected, true);
  }
  void Release() { busy_.store(false); }
  bool IsBusy() const { return busy_.load(); }

 private:
  std::atomic<bool> busy_{false};
};

// Runs `work` off the JS thread and resolves a Promise with `toJs(result)`. Keeps `owner` alive and holds its
// busy flag until the promise settles. Every exception becomes a rejected promise with a code.
template <typename Result>
class PromiseWorker : public Napi::AsyncWorker {
 public:
  using Work = std::function<Result()>;
  using ToJs = std::function<Napi::Value(Napi::Env, Result&)>;

  static Napi::Promise Start(Napi::Env env, Napi::Object owner, BusyFlag* busy, const std::string& what, Work work,
                             ToJs toJs) {
    auto* worker = new PromiseWorker(env, owner, busy, what, std::move(work), std::move(toJs));
    auto promise = worker->deferred_.Promise();
    if (busy != nullptr && !busy->TryAcquire()) {
      worker->deferred_.Reject(
          MakeJsError(env, "EBUSY", what + ": the object is busy with another call (calls must be sequential)")
              .Value());
      worker->SuppressDestruct();
      delete worker;
      return promise;
    }
    worker->Queue();
    return promise;
  }

 protected:
  void Execute() override {
    try {
      result_ = work_();
    } catch (const EngineError& e) {
      code_ = e.code();
      SetError(e.what());
    } catch (const std::exception& e) {
      code_ = "EENGINE";
      SetError(what_ + ": " + e.what());
    } catch (...) {
      code_ = "EENGINE";
      SetError(what_ + ": unknown native exception");
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::HandleScope scope(env);
    Release();
    try {
      deferred_.Resolve(toJs_(env, result_));
    } catch (const Napi::Error& e) {
      deferred_.Reject(e.Value());
    }
  }

  void OnError(const Napi::Error& e) override {
    Napi::Env env = Env();
    Napi::HandleScope scope(env);
    Release();
    deferred_.Reject(MakeJsError(env, code_, e.Message()).Value());
  }

 private:
  PromiseWorker(Napi::Env env, Napi::Object owner, BusyFlag* busy, std::string what, Work work, ToJs toJs)
      : Napi::AsyncWorker(env, what.c_str()),
        deferred_(Napi::Promise::Deferred::New(env)),
        busy_(busy),
        what_(std::move(what)),
        work_(std::move(work)),
        toJs_(std::move(toJs)) {
    owner_ = Napi::Persistent(owner);
  }

  void Release() {
    if (busy_ != nullptr) busy_->Release();
    busy_ = nullptr;
  }

  Napi::Promise::Deferred deferred_;
  Napi::ObjectReference owner_;
  BusyFlag* busy_;
  std::string what_;
  Work work_;
  ToJs toJs_;
  Result result_{};
  std::string code_ = "EENGINE";
};

inline std::string ShapeToString(const std::vector<int>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

bool FileExists(const std::string& path);

// Resident set size of this process in bytes (0 when /proc is unavailable). Loads report their growth to V8
// as external memory so that the GC sees what a model costs.
int64_t ResidentBytes();

}  // namespace mnn_edge
