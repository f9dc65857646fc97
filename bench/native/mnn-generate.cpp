// One greedy generation through MNN's Llm API, as our engine drives it, for boards with no Node to run the addon
// on (riscv64 here: no riscv64 Node is published). It answers one prompt the way llm_demo reads a prompt file
// (chat template, media tags, max_new_tokens from config.json) and prints one JSON line:
//   {"text":"…","outputIds":[…],"promptTokens":N,"decodeTokens":N}
// so a test compares it with the fixtures' recording token by token.
//
// On RISC-V it first checks that the CPU has what the linked libMNN.so was built for: an MNN built with
// MNN_USE_RVV has no run-time dispatch and would die of SIGILL at its first vector instruction, so on a CPU without
// V it refuses with both sides named (exit 3) before any model is touched.
//
// Usage: mnn-generate CONFIG PROMPT_FILE
#include <llm/llm.hpp>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#if defined(__riscv)
#include <dlfcn.h>
#include <elf.h>
#include <sys/auxv.h>
#endif

using MNN::Transformer::Llm;

namespace {

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

#if defined(__riscv)
// Tag_RISCV_arch of an ELF file's .riscv.attributes section ("rv64i2p1_…_v1p0_…"), or "" when absent.
std::string RiscvArchOf(const char* path) {
  std::ifstream f(path, std::ios::binary);
  Elf64_Ehdr eh{};
  if (!f.read(reinterpret_cast<char*>(&eh), sizeof eh)) return "";
  for (int i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh{};
    f.seekg(static_cast<std::streamoff>(eh.e_shoff + static_cast<Elf64_Off>(i) * eh.e_shentsize));
    if (!f.read(reinterpret_cast<char*>(&sh), sizeof sh)) return "";
    if (sh.sh_type != 0x70000003 /* SHT_RISCV_ATTRIBUTES */ || sh.sh_size > (1 << 16)) continue;
    std::string body(sh.sh_size, '\0');
    f.seekg(static_cast<std::streamoff>(sh.sh_offset));
    if (!f.read(&body[0], static_cast<std::streamsize>(body.size()))) return "";
    auto at = body.find("rv64");
    if (at == std::string::npos) return "";
    return std::string(body.c_str() + at);
  }
  return "";
}

bool ArchHasVector(const std::string& arch) {
  // GCC spells the single letters together (rv64imafdcv), LLVM one per underscore-separated part (…_v1p0_…).
  auto first = arch.find('_');
  std::string base = arch.substr(4, first == std::string::npos ? std::string::npos : first - 4);
  for (size_t i = 0; i < base.size(); ++i)
    if (base[i] == 'v') return true;
  for (size_t at = first; at != std::string::npos; at = arch.find('_', at + 1))
    if (at + 1 < arch.size() && arch[at + 1] == 'v' && (at + 2 >= arch.size() || std::isdigit(arch[at + 2]) || arch[at + 2] == '_'))
      return true;
  return false;
}

// Returns an empty string when the CPU can run the linked MNN, otherwise why not.
std::string VectorRefusal() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&Llm::createLLM), &info) == 0 || info.dli_fname == nullptr) return "";
  std::string arch = RiscvArchOf(info.dli_fname);
  unsigned long hwcap = getauxval(AT_HWCAP);
  bool cpuHasV = (hwcap & (1UL << ('V' - 'A'))) != 0;
  if (arch.empty() || !ArchHasVector(arch) || cpuHasV) return "";
  char hw[32];
  std::snprintf(hw, sizeof hw, "0x%lx", hwcap);
  return std::string(info.dli_fname) + " is built for " + arch +
         ", which needs the RISC-V vector extension (V), and this CPU has none (AT_HWCAP=" + hw +
         " has no V bit); use an MNN built without MNN_USE_RVV for this board";
}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s CONFIG PROMPT_FILE\n", argv[0]);
    return 2;
  }
#if defined(__riscv)
  std::string refusal = VectorRefusal();
  if (!refusal.empty()) {
    std::fprintf(stderr, "mnn-generate: refused: %s\n", refusal.c_str());
    return 3;
  }
#endif
  std::ifstream promptFile(argv[2]);
  std::string prompt;
  if (!promptFile || !std::getline(promptFile, prompt)) {
    std::fprintf(stderr, "mnn-generate: cannot read a prompt line from %s\n", argv[2]);
    return 2;
  }
  std::unique_ptr<Llm, void (*)(Llm*)> llm(Llm::createLLM(argv[1]), Llm::destroy);
  if (!llm || !llm->load()) {
    std::fprintf(stderr, "mnn-generate: cannot load %s\n", argv[1]);
    return 1;
  }
  std::ostringstream text;
  llm->response(prompt, &text);
  const auto* ctx = llm->getContext();
  std::string ids;
  for (size_t i = 0; i < ctx->output_tokens.size(); ++i)
    ids += (i ? "," : "") + std::to_string(ctx->output_tokens[i]);
  std::printf("{\"text\":%s,\"outputIds\":[%s],\"promptTokens\":%d,\"decodeTokens\":%d}\n", JsonString(text.str()).c_str(),
              ids.c_str(), ctx->prompt_len, ctx->gen_seq_len);
  return 0;
}
