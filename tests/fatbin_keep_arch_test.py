"""scripts/fatbin-keep-arch.py on CUDA objects of this build (cubins for sm_80 and sm_90a): the result
is the same size, cuobjdump reads it and lists only the kept architecture's cubins, each byte for
byte the original's; a file with no fatbin, or none for the asked architecture, is refused.
Run by ctest: fatbin_keep_arch_test.py SCRIPT CUOBJDUMP OBJECT..."""
import pathlib
import subprocess
import sys
import tempfile


def cubins(cuobjdump, path, where):
    """{architecture: bytes} of the cubins cuobjdump extracts from path."""
    where.mkdir()
    subprocess.run([cuobjdump, "-xelf", "all", str(pathlib.Path(path).resolve())], cwd=where, check=True, capture_output=True)
    return {f.name.rsplit(".", 2)[-2]: f.read_bytes() for f in where.iterdir()}


def main():
    script, cuobjdump, objects = sys.argv[1], sys.argv[2], sys.argv[3:]
    tmp = pathlib.Path(tempfile.mkdtemp())
    for i, obj in enumerate(objects):
        before = cubins(cuobjdump, obj, tmp / f"before{i}")
        if {"sm_80", "sm_90a"} <= before.keys():
            break
    else:
        sys.exit(f"no object with sm_80 and sm_90a cubins among {len(objects)}")
    out = tmp / "kept.o"
    subprocess.run([sys.executable, script, obj, str(out), "90"], check=True)
    assert out.stat().st_size == pathlib.Path(obj).stat().st_size, "the file changed size"
    after = cubins(cuobjdump, out, tmp / "after")
    assert after == {"sm_90a": before["sm_90a"]}, f"kept {sorted(after)}"

    for path, arch, says in ((obj, "89", "no sm_89 cubin"), (sys.executable, "90", "no .nv_fatbin section"),
                             (script, "90", "not a 64-bit ELF")):
        bad = subprocess.run([sys.executable, script, path, str(tmp / "x"), arch], capture_output=True, text=True)
        assert bad.returncode != 0 and says in bad.stderr, (path, bad.returncode, bad.stderr)
    print(f"fatbin-keep-arch: {pathlib.Path(obj).name} cut to its sm_90a cubin, byte for byte; bad inputs refused")


if __name__ == "__main__":
    main()
