#!/usr/bin/env python3
"""The compile step of a CPU rung's AVX2 or AVX-512 build (cmake/cpu_isa.cmake), and its check.

  cpu_isa_object.py compile SUFFIX COMMAND...   runs COMMAND (the compiler line), then renames in
                                                its -o object every symbol that carries code the
                                                linker could share with another build
  cpu_isa_object.py check OBJECT...             exits 1 naming any such symbol left unrenamed

Why: an inline function or template instantiation (std::vector's, kl::Variant's copy) compiled
here for AVX-512 is a weak symbol with the same name as the baseline build's copy, and the linker
keeps one of them for every caller: a generic caller could get the AVX-512 copy and fault on a CPU
without it. Renamed (weak functions, vtables, and the local signatures of constructor and
destructor COMDAT groups get SUFFIX), each level's copies are its own; data (typeinfo, static
locals, inline variables) stays shared, as one object must.
"""
import subprocess
import sys


def elf_symbols(obj):
    """(name, type, binding) of each symbol defined in obj."""
    out = subprocess.run(["readelf", "-sW", obj], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[0].endswith(":") and f[0][:-1].isdigit() and f[6] != "UND":
            yield f[7], f[3], f[4]


def group_signatures(obj):
    out = subprocess.run(["readelf", "-gW", obj], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if line.startswith("COMDAT group section"):
            yield line[line.index("[", line.index("`")) + 1:line.rindex("] contains")]


def shared_code(obj):
    """The symbols of obj that name code another object could define under the same name."""
    sigs = set(group_signatures(obj))
    names = set()
    for name, typ, bind in elf_symbols(obj):
        if bind in ("WEAK", "UNIQUE") and (typ == "FUNC" or name.startswith(("_ZTV", "_ZTT", "_ZTC"))):
            names.add(name)
        elif name in sigs and typ == "NOTYPE":  # a C5/D5 group holding a constructor's or destructor's variants
            names.add(name)
    return names


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "compile":
        suffix, command = sys.argv[2], sys.argv[3:]
        rc = subprocess.run(command).returncode
        if rc != 0:
            return rc
        obj = command[command.index("-o") + 1]
        names = sorted(n for n in shared_code(obj) if not n.endswith(suffix))
        if names:
            mapping = obj + ".rename"
            with open(mapping, "w") as f:
                f.writelines(f"{n} {n}{suffix}\n" for n in names)
            subprocess.run(["objcopy", f"--redefine-syms={mapping}", obj], check=True)
        return 0
    if len(sys.argv) >= 3 and sys.argv[1] == "check":
        bad = [(obj, n) for obj in sys.argv[2:] for n in sorted(shared_code(obj)) if ".isa_" not in n]
        for obj, n in bad:
            print(f"{obj}: {n} is code the linker may share with another instruction-set build", file=sys.stderr)
        print(f"checked {len(sys.argv) - 2} objects: {len(bad)} shared symbols")
        return 1 if bad else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
