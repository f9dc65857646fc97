// Token pieces are bytes: one token may end in the middle of a multi-byte character (byte-level BPE). This
// holds back an incomplete trailing sequence so that every piece handed to JS is whole UTF-8.
#pragma once

#include <string>

namespace mnn_edge {

class Utf8Assembler {
 public:
  // Appends bytes and returns the longest prefix that ends on a character boundary.
  std::string Push(const std::string& bytes) {
    pending_ += bytes;
    size_t cut = CompletePrefixLength(pending_);
    std::string out = pending_.substr(0, cut);
    pending_.erase(0, cut);
    return out;
  }

  // Whatever is left at the end of a generation (an invalid sequence); JS replaces bad bytes with U+FFFD.
  std::string Flush() {
    std::string out;
    out.swap(pending_);
    return out;
  }

  void Clear() { pending_.clear(); }

  static size_t CompletePrefixLength(const std::string& s) {
    size_t n = s.size();
    // Look back at most 3 bytes for the lead byte of a sequence that may still be open.
    for (size_t back = 1; back <= 3 && back <= n; ++back) {
      unsigned char c = static_cast<unsigned char>(s[n - back]);
      if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
      size_t need = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
      return need > back ? n - back : n;
    }
    return n;
  }

 private:
  std::string pending_;
};

}  // namespace mnn_edge
