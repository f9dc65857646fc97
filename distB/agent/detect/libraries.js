// Where driver userspace lands on the distributions we meet: Debian multiarch, Yocto's flat /usr/lib, JetPack's
// nvidia/ (6.x) and tegra/ (5.x) subdirectories, CUDA's own tree, and Android-style /vendor on some Qualcomm images.
export const LIBRARY_DIRS = [
    '/usr/lib',
    '/usr/lib64',
    '/lib',
    '/usr/local/lib',
    '/usr/lib/aarch64-linux-gnu',
    '/usr/lib/riscv64-linux-gnu',
    '/usr/lib/x86_64-linux-gnu',
    '/usr/lib/aarch64-linux-gnu/nvidia',
    '/usr/lib/aarch64-linux-gnu/tegra',
    '/usr/local/cuda/lib64',
    '/usr/local/cuda/targets/aarch64-linux/lib',
    '/vendor/lib64',
];
export function createLibraryFinder(fs) {
    const exact = new Map();
    const listings = new Map();
    const lookup = (name) => {
        if (exact.has(name))
            return exact.get(name);
        let found = null;
        for (const dir of LIBRARY_DIRS) {
            const path = `${dir}/${name}`;
            if (fs.node(path).present) {
                found = path;
                break;
            }
        }
        exact.set(name, found);
        return found;
    };
    return {
        find: (names) => names.map(lookup).filter((p) => p !== null),
        match(pattern) {
            const out = [];
            for (const dir of LIBRARY_DIRS) {
                let names = listings.get(dir);
                if (!names) {
                    names = fs.list(dir);
                    listings.set(dir, names);
                }
                for (const n of names)
                    if (pattern.test(n))
                        out.push(`${dir}/${n}`);
            }
            return out;
        },
    };
}
//# sourceMappingURL=libraries.js.map