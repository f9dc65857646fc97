#!/usr/bin/env bash
# Builds the RHVoice speech synthesiser (C++, its own CMake build) and its English voices whose licences let us
# train on them, for the wake-word generator (engine/tools/wake-keyword/rhvoice.ts). Nothing lands in the
# repository: the sources go to $RHVOICE_HOME/src, the build to $RHVOICE_HOME/build and the result to
# $RHVOICE_HOME/bin/RHVoice-test with its data in $RHVOICE_HOME/share/RHVoice (RHVOICE_HOME defaults to
# $MNN_EDGE_CACHE/rhvoice, i.e. ~/.cache/mnn-edge/rhvoice). Every repository is pinned to a commit below and
# taken from a local snapshot (`$MNN_EDGE_MIRRORS`, default /work/.mirror, one `<owner>+<name>/repo` git
# directory each) or, where there is none, cloned from GitHub. Anything missing is named in one line.
#
# Left out on purpose: evgeniy-eng and lyubov-eng (CC BY-NC-ND 4.0: no commercial use), dasha-eng (no snapshot;
# an RHVoice Lab voice, whose voices are CC BY-NC-ND). Licences of the rest: docs/WAKE.md, "RHVoice voices".
set -euo pipefail

home=${RHVOICE_HOME:-${MNN_EDGE_CACHE:-$HOME/.cache/mnn-edge}/rhvoice}
mirrors=${MNN_EDGE_MIRRORS:-/work/.mirror}
jobs=${RHVOICE_JOBS:-2}

# repository, commit, where it goes in the source tree. The voices' and the language's commits are the newest
# snapshots reachable here (RHVoice's own .gitmodules pins ksp-eng and English to commits those lack).
sources=(
  "RHVoice/RHVoice e830be7aa5e8adfecf56070cc5531f34258882c7 ."
  "TheLartians/Ccache.cmake 17084300aa02f338a9ddf9e0352426d59b3d6eec cmake/thirdParty/CCache"
  "arsenm/sanitizers-cmake 99e159ec9bc8dd362b08d18436bd40ff0648417b cmake/thirdParty/sanitizers"
  "RHVoice/English a82ddcbf1f31a9cec1d56180bee6fabc7741d5e0 data/languages/English"
  "RHVoice/slt-eng c17dded68322016aba2868d9c29f11bba14d275f data/voices/slt"
  "RHVoice/bdl-eng ea6b944550af6f9b33f2cc5e20f38d3b19087068 data/voices/bdl"
  "RHVoice/clb-eng e0aa06cf50334f10844d1a28a72b3fdcf3cdd150 data/voices/clb"
  "RHVoice/alan-eng bb3fdb15b9c64109f396f56f6155965bfcf89977 data/voices/alan"
  "RHVoice/ksp-eng 427aa319ae736d1421c16dc01514540574ade70f data/voices/ksp"
)
voices=(slt bdl clb alan ksp)
# Files each voice needs, at both of its rates (RHVoice-test writes 24 kHz). The largest, voice.data, is 1.8–2.6
# MB: snapshots, which leave out files of 4 MiB and more, keep them all.
voice_files=(voice.info)
for hz in 16000 24000; do
  for f in voice.data mgc.pdf lf0.pdf dur.pdf bap.pdf tree-mgc.inf tree-lf0.inf tree-dur.inf tree-bap.inf; do
    voice_files+=("$hz/$f")
  done
done
stamp="$home/built-from"

wanted_stamp() { printf '%s\n' "${sources[@]}"; }

if [ -x "$home/bin/RHVoice-test" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(wanted_stamp)" ]; then
  echo "rhvoice: already built in $home"
  exit 0
fi

missing=()
for tool in cmake make "${CXX:-g++}" "${CC:-gcc}" git tar; do command -v "$tool" >/dev/null || missing+=("$tool"); done
[ -f /usr/include/boost/algorithm/string.hpp ] || missing+=("boost headers")
if ((${#missing[@]})); then
  echo "rhvoice: cannot build: missing ${missing[*]} (apt install cmake make gcc g++ git libboost-dev)" >&2
  exit 1
fi

src="$home/src"

# Puts `repo` at `commit` into $src/`dest`, from the local snapshot or from GitHub.
get() {
  local repo=$1 commit=$2 dest=$3 git_dir
  git_dir="$mirrors/${repo/\//+}/repo"
  [ -d "$git_dir" ] || git_dir="$mirrors/${repo/\//+}"
  if ! git --git-dir="$git_dir" cat-file -e "$commit^{commit}" 2>/dev/null; then
    git_dir="$home/clones/${repo/\//+}.git"
    if [ ! -d "$git_dir" ]; then
      git clone --quiet --bare "https://github.com/$repo" "$git_dir" 2>/dev/null || {
        echo "rhvoice: cannot get github:$repo (no snapshot under $mirrors, no clone from GitHub)" >&2
        return 1
      }
    fi
    git --git-dir="$git_dir" cat-file -e "$commit^{commit}" 2>/dev/null || {
      echo "rhvoice: github:$repo lacks commit $commit" >&2
      return 1
    }
  fi
  mkdir -p "$src/$dest"
  git --git-dir="$git_dir" archive "$commit" | tar -x -C "$src/$dest"
}

# The sources are taken again only when the list above changed; the build folder is kept, so a rerun after a
# failure goes on where it stopped.
if [ ! -f "$src/.mnn-edge-sources" ] || [ "$(cat "$src/.mnn-edge-sources")" != "$(wanted_stamp)" ]; then
  rm -rf "$src" "$home/build"
  mkdir -p "$src"
  for line in "${sources[@]}"; do
    # shellcheck disable=SC2086 # each line is three words
    get $line
  done
  # RHVoice builds as C++20, where a constructor named with its template arguments (`ValueArg<T>(…)`) is an error
  # (GCC 12 refuses it); its bundled TCLAP declares two copy constructors that way.
  sed -i 's/^\(\s*\)ValueArg<T>(const ValueArg<T>& rhs);/\1ValueArg(const ValueArg<T>\& rhs);/' \
    "$src/src/third-party/tclap/tclap/ValueArg.h"
  sed -i 's/^\(\s*\)MultiArg<T>(const MultiArg<T>& rhs);/\1MultiArg(const MultiArg<T>\& rhs);/' \
    "$src/src/third-party/tclap/tclap/MultiArg.h"
  wanted_stamp >"$src/.mnn-edge-sources"
fi

absent=()
for v in "${voices[@]}"; do
  for f in "${voice_files[@]}"; do
    [ -s "$src/data/voices/$v/$f" ] || absent+=("$v/$f")
  done
done
if ((${#absent[@]})); then
  echo "rhvoice: voice data missing from the snapshots (files of 4 MiB or more and Git LFS content are left out): ${absent[*]}" >&2
  exit 1
fi

# Only the library and its command-line synthesiser (RHVoice-test), writing WAV files: no audio output, no
# client, service or speech-dispatcher module. The data is copied below instead of packaged (WITH_DATA=OFF
# would otherwise want every voice of every language).
nice -n 15 cmake -S "$src" -B "$home/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$home" \
  -DRHVOICE_VERSION_FROM_GIT=1.18.4-7-ge830be7a -DWITH_DATA=OFF -DBUILD_CLIENT=OFF -DBUILD_SERVICE=OFF -DBUILD_SPEECHDISPATCHER_MODULE=OFF -DBUILD_UTILS=OFF \
  -DWITH_LIBAO=OFF -DWITH_PULSE=OFF -DWITH_PORTAUDIO=OFF >"$home/cmake.log" 2>&1 || {
  echo "rhvoice: cmake failed (see $home/cmake.log)" >&2
  exit 1
}
nice -n 15 cmake --build "$home/build" -j "$jobs" >"$home/build.log" 2>&1 || {
  echo "rhvoice: build failed (see $home/build.log)" >&2
  exit 1
}
cmake --install "$home/build" >"$home/install.log" 2>&1 || {
  echo "rhvoice: install failed (see $home/install.log)" >&2
  exit 1
}
data="$home/share/RHVoice"
rm -rf "$data"
mkdir -p "$data/languages" "$data/voices"
cp -r "$src/data/languages/English" "$data/languages/"
for v in "${voices[@]}"; do cp -r "$src/data/voices/$v" "$data/voices/"; done
wanted_stamp >"$stamp"
echo "rhvoice: built in $home (voices: ${voices[*]})"
