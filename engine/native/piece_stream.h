// The std::ostream MNN's generation loop writes each token's text to (Llm::generate_init's `os`). MNN writes a
// token and flushes it right after sampling it and before the forward step that computes the next one, so
// taking the text here hands a token over one decode step earlier than reading it after generate(1) returns:
// the first token comes after the prefill alone, as in MNN's own streaming demo. Writes while no sink is set
// (there is no generation to hand them to) are dropped.
#pragma once

#include <functional>
#include <ostream>
#include <streambuf>
#include <string>

namespace mnn_edge {

class PieceStream {
 public:
  using Sink = std::function<void(const std::string&)>;

  std::ostream* Stream() { return &os_; }
  // Only the decode thread writes to the stream and sets or clears the sink, so no lock is needed.
  void SetSink(Sink sink) { buf_.Reset(std::move(sink)); }
  void ClearSink() { buf_.Reset(nullptr); }

 private:
  class Buffer : public std::streambuf {
   public:
    void Reset(Sink sink) {
      pending_.clear();
      sink_ = std::move(sink);
    }

   protected:
    int_type overflow(int_type c) override {
      if (c != traits_type::eof()) pending_.push_back(static_cast<char>(c));
      return traits_type::not_eof(c);
    }
    std::streamsize xsputn(const char* s, std::streamsize n) override {
      pending_.append(s, static_cast<size_t>(n));
      return n;
    }
    int sync() override {
      if (!pending_.empty() && sink_) sink_(pending_);
      pending_.clear();
      return 0;
    }

   private:
    std::string pending_;
    Sink sink_;
  };

  Buffer buf_;
  std::ostream os_{&buf_};
};

}  // namespace mnn_edge
