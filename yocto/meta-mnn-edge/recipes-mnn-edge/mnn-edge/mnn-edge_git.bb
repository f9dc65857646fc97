SUMMARY = "mnn-edge on-device AI agent"
DESCRIPTION = "Detects the board's accelerators, places models on MNN backends, runs them in engine host \
processes, serves the local dashboard and talks to the fleet over MQTT."
HOMEPAGE = "https://github.com/mnn-edge/mnn-edge"
SECTION = "ai"

# The agent is Apache-2.0 (LICENSE); the rest is what its production npm dependencies declare, with the
# license text of each one (generated with the shrinkwrap; scripts/check-layer.ts keeps both current).
require mnn-edge-licenses.inc

# The engine addon is compiled against the target's MNN (headers, libMNN, Express, the LLM engine) from this
# layer's `mnn` recipe (recipes-mnn/mnn), or yours with the contract in docs/YOCTO.md.
DEPENDS += "mnn nodejs-native cmake-native chrpath-replacement-native"
EXTRANATIVEPATH += "chrpath-native"

SRC_URI = " \
    git://github.com/mnn-edge/mnn-edge.git;protocol=https;branch=main;destsuffix=git \
    npmsw://${THISDIR}/${BPN}/npm-shrinkwrap.json;dev=1 \
    file://stage-manifest.txt \
    file://mnn-edge.service \
    file://mnn-edge.sysusers \
    file://mnn-edge.tmpfiles \
    file://agent.json \
    file://agent-mosquitto.json \
    file://mnn-edge-local-mosquitto.conf \
    file://mosquitto-mnn-edge.conf \
    file://mosquitto.conf \
    file://mosquitto.acl \
"
# The commit this layer was released with; `SRCREV:pn-mnn-edge = "${AUTOREV}"` follows the branch instead
# (that needs the network while parsing), another hash builds another commit.
SRCREV ?= "896c776c3b417d3de1775137a5b1559c72d07f94"
PV = "0.1.0+git"
# scarthgap unpacks into WORKDIR and has no UNPACKDIR; later releases set it themselves.
UNPACKDIR ??= "${WORKDIR}"
S = "${UNPACKDIR}/git"

inherit npm systemd useradd features_check

# The unit, sysusers and tmpfiles paths in stage-manifest.txt are the merged-/usr ones.
REQUIRED_DISTRO_FEATURES = "systemd usrmerge"

# The shrinkwrap holds the production dependencies and the build tools only (TypeScript, esbuild-wasm, the
# @types packages, and the packages bundled into the agent by do_compile_ts: package.json `bundledIntoAgent`;
# marked dev, fetched because of dev=1 above); the image gets the production dependencies and the bundle.
NPM_INSTALL_DEV = "0"

# npm.bbclass packs ${S} as the main package, and its tar exclude ("./node-modules") misses the node_modules
# npmsw unpacked there, build tools included: drop them so that npm installs every dependency from its cache,
# production ones only, built for the target.
python do_configure:append() {
    bb.utils.remove(os.path.join(d.getVar("NPM_PACKAGE"), "node_modules"), recurse=True)
}

# npm's postinstall (engine/scripts/build-engine.mjs) builds the addon with cmake-js, the cross compiler
# from CC/CXX and this MNN prefix.
export MNN_ROOT = "${STAGING_DIR_TARGET}${prefix}"

do_compile_ts() {
    cd ${S}
    ${RECIPE_SYSROOT_NATIVE}${bindir_native}/node ${S}/node_modules/typescript/bin/tsc -p tsconfig.build.json
    # The CLI bundled in place, as `npm run build` does (esbuild-wasm: see do_compile_dashboard).
    MNN_EDGE_ESBUILD=wasm ${RECIPE_SYSROOT_NATIVE}${bindir_native}/node ${S}/scripts/bundle-agent.mjs ${S}/dist
}
addtask compile_ts after do_patch do_prepare_recipe_sysroot before do_configure

# The dashboard is static files. esbuild's native binary in node_modules is the target's, which the build
# host cannot run; esbuild-wasm (a devDependency) runs on nodejs-native whatever the two CPUs are.
do_compile_dashboard() {
    cd ${S}
    MNN_EDGE_ESBUILD=wasm ${RECIPE_SYSROOT_NATIVE}${bindir_native}/node ${S}/dashboard/build.mjs
}
addtask compile_dashboard after do_compile_ts before do_configure

do_install:append() {
    manifest=${UNPACKDIR}/stage-manifest.txt
    app=${D}${nonarch_libdir}/node_modules/${BPN}
    [ "$(sed -n 's/^app //p' "$manifest")" = "${nonarch_libdir}/node_modules/${BPN}" ] || \
        bbfatal "stage-manifest.txt names another application directory than ${nonarch_libdir}/node_modules/${BPN}"

    # npm installs the whole source tree; keep exactly what `npm run stage` lays out.
    mv "$app" "$app.npm"
    install -d "$app"
    while read -r kind a b c; do
        case "$kind" in
            keep|keep\?)
                if [ -e "$app.npm/$a" ]; then
                    install -d "$(dirname "$app/$a")"
                    cp -R --no-preserve=ownership "$app.npm/$a" "$app/$a"
                elif [ "$kind" = keep ]; then
                    bbfatal "stage-manifest.txt: $a is missing from the npm install"
                fi
                ;;
            file)
                case "$b" in
                    layer:*) from="${UNPACKDIR}/$(echo "$b" | cut -d: -f2-)" ;;
                    src:*) from="${S}/$(echo "$b" | cut -d: -f2-)" ;;
                    *) bbfatal "stage-manifest.txt: unknown source $b" ;;
                esac
                install -D -m "$a" "$from" "${D}$c"
                ;;
            link)
                install -d "$(dirname "${D}$b")"
                ln -sfn "$a" "${D}$b"
                ;;
        esac
    done < "$manifest"
    rm -rf "$app.npm"

    addon="$app/engine/build/Release/mnn_edge_engine.node"
    [ -f "$addon" ] || \
        bbfatal "the engine addon was not built: the mnn recipe must install include/MNN, include/llm/llm.hpp and libMNN.so"
    # The addon's build RPATH points into the recipe sysroot; on the target libMNN.so is on the default path.
    chrpath -d "$addon"
}

USERADD_PACKAGES = "${PN}"
GROUPADD_PARAM:${PN} = "--system -f render"
USERADD_PARAM:${PN} = "--system --home-dir /var/lib/mnn-edge --no-create-home --shell /sbin/nologin \
    --user-group --groups video,audio,render mnn-edge"

SYSTEMD_SERVICE:${PN} = "mnn-edge.service"
SYSTEMD_AUTO_ENABLE:${PN} = "enable"

PACKAGES =+ "${PN}-mosquitto"
FILES:${PN}-mosquitto = " \
    ${sysconfdir}/mnn-edge/mosquitto.conf \
    ${sysconfdir}/mnn-edge/mosquitto.acl \
    ${sysconfdir}/mnn-edge/agent-mosquitto.json \
    ${systemd_system_unitdir}/mnn-edge.service.d/50-local-mosquitto.conf \
    ${systemd_system_unitdir}/mosquitto.service.d/50-mnn-edge.conf \
"
FILES:${PN} += " \
    ${sysconfdir}/mnn-edge/agent.json \
    ${nonarch_libdir}/sysusers.d/mnn-edge.conf \
    ${nonarch_libdir}/tmpfiles.d/mnn-edge.conf \
"
CONFFILES:${PN} = "${sysconfdir}/mnn-edge/agent.json"
CONFFILES:${PN}-mosquitto = "${sysconfdir}/mnn-edge/mosquitto.conf ${sysconfdir}/mnn-edge/mosquitto.acl"

# systemd-notify (sd_notify from Node) ships in the systemd package.
RDEPENDS:${PN} += "nodejs systemd"
RDEPENDS:${PN}-mosquitto = "${PN} mosquitto"
