"""SASS disassembly: run ``nvdisasm`` on a cubin, parse instructions, find loops,
and map each purity target to the set of SASS opcodes that implement it per architecture.

An opcode *class* is a list of :class:`OpcodePattern` (an ``fnmatch`` pattern over the full
opcode with modifiers, e.g. ``"MUFU.SIN"`` or ``"IADD3"``, optionally with a regular
expression the operands must match). Classes are identical on sm_75, sm_80 and sm_90 unless
:data:`ARCH_OVERRIDES` says otherwise.

Notes on the mapping (sm_70 and later, checked with nvcc 13 / ptxas 13):

* 32-bit integer add has no two-input form: ``add.s32`` becomes ``IADD3`` (three inputs,
  one ``RZ``), and ptxas may move an add onto the FMA pipe as ``IMAD.IADD`` or, on sm_90,
  use ``VIADD``; all three count as integer add.
* ``clz.b32`` is ``FLO.U32`` followed by ``IADD3 d, -d, 0x1f`` (31 - position): a two-
  instruction sequence; ``bfe``/``bfi`` have no instruction since Volta and become
  ``SHF``/``SGXT``/``BMSK``/``LOP3`` sequences.
* ``sin/cos.approx.f32`` is ``FMUL.RZ`` (scale by 1/2pi) + ``MUFU.SIN``/``MUFU.COS``.
* ``div.approx.f32`` is ``MUFU.RCP`` + ``FMUL``; ``div.full.f32`` and ``div.rn.f32`` are
  longer sequences; ``rem.s32`` with a run-time divisor is an integer-reciprocal sequence.
* A ``.volatile`` global load is ``LDG.E.STRONG.SYS`` (L1 bypassed); plain or ``.cg`` loads
  whose result is dead are removed by ptxas, hence the volatile loads in the memory kernels.
* Constant memory is read as an operand ``c[0x3][...]`` of an ALU instruction (bank 3 holds
  ``__constant__`` data) or by ``LDC`` with a register index.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from perfml.errors import KernelCompileError
from perfml.kernels.compile import ToolchainMissingError, find_nvdisasm

__all__ = [
    "ARCH_OVERRIDES",
    "OPCODE_CLASSES",
    "Instruction",
    "Loop",
    "OpcodePattern",
    "SassFunction",
    "disassemble",
    "find_loops",
    "opcode_class",
    "parse_sass",
]


@dataclass(frozen=True)
class OpcodePattern:
    """An ``fnmatch`` pattern over the full opcode, optionally constrained on operands."""

    opcode: str
    operands: str | None = None  # regular expression searched in the operand text

    def matches(self, ins: Instruction) -> bool:
        if not fnmatchcase(ins.opcode, self.opcode):
            return False
        return self.operands is None or re.search(self.operands, ins.operands) is not None


def _p(*patterns: str) -> tuple[OpcodePattern, ...]:
    return tuple(OpcodePattern(p) for p in patterns)


_INT_ADD = _p("IADD3", "VIADD", "IMAD.IADD")
_CONST_OPERAND = OpcodePattern("*", r"c\[0x3\]")

#: target name -> SASS opcode patterns (sm_75, sm_80 and sm_90 unless overridden)
OPCODE_CLASSES: dict[str, tuple[OpcodePattern, ...]] = {
    # ---- integer ALU
    "IADD3": _INT_ADD,
    "IMAD": _p("IMAD", "IMAD.U32", "IMAD.LO*"),
    "CLZ_SEQ": _p("FLO.U32", "FLO.U32.SH", "IADD3"),  # clz = 31 - flo(x)
    "FLO": _p("FLO*"),
    "BREV": _p("BREV"),
    "BFE_SEQ": _p("SHF.R.*", "SGXT*"),
    "BFI_SEQ": _p("IMAD.SHL*", "SHF.L.*", "LOP3.LUT"),
    "SHF": _p("SHF.*", "SHL", "SHR*", "IMAD.SHL*"),
    "POPC": _p("POPC"),
    "REM_SEQ": _p(  # rem.s32 by a run-time divisor: |d| reciprocal (hoisted), multiply-high,
        # two conditional corrections, sign fix-up, zero-divisor select
        "IABS", "IMAD", "IMAD.HI.U32", "IMAD.MOV", "IMAD.IADD", "ISETP.GT.U32.AND",
        "IADD3", "ISETP.GE.AND", "SEL", "I2F.RP", "I2F.U32.RP", "MUFU.RCP", "F2I.FTZ.U32.TRUNC.NTZ",
        "LOP3.LUT",
    ),
    "IADD64": _p("IADD3", "IADD3.X", "IMAD.X", "VIADD", "IMAD.IADD", "IADD.64"),
    # ---- FP32 / FP64 / FP16
    "FADD": _p("FADD", "FADD.*"),
    "FMUL": _p("FMUL", "FMUL.*"),
    "FFMA": _p("FFMA", "FFMA.*"),
    "DADD": _p("DADD", "DADD.*"),
    "DFMA": _p("DFMA", "DFMA.*"),
    "HFMA2": _p("HFMA2", "HFMA2.*"),  # .MMA is the same operation issued on the other pipe
    "DIV_APPROX": _p("MUFU.RCP", "FMUL", "FMUL.*"),
    "DIV_FULL": _p("MUFU.RCP", "FMUL", "FMUL.*", "FSETP.*", "FSEL"),
    "DIV_RN": _p(  # fast path inline, slow path out of line behind FCHK
        "MUFU.RCP", "FFMA", "FFMA.*", "FCHK", "BSSY", "BSYNC", "BMOV*", "BRA", "CALL.REL*",
        "MOV", "IMAD.MOV*",
    ),
    # ---- SFU
    "SIN_SEQ": _p("MUFU.SIN", "FMUL.RZ"),
    "COS_SEQ": _p("MUFU.COS", "FMUL.RZ"),
    "MUFU.SIN": _p("MUFU.SIN"),
    "MUFU.COS": _p("MUFU.COS"),
    "MUFU.EX2": _p("MUFU.EX2"),
    "MUFU.LG2": _p("MUFU.LG2"),
    "MUFU.RSQ": _p("MUFU.RSQ"),
    "MUFU.RCP": _p("MUFU.RCP"),
    "MUFU": _p("MUFU.*"),
    # ---- memory
    "LDG": _p("LDG*"),
    "STG": _p("STG*"),
    "LDS": _p("LDS*"),
    "STS": _p("STS*"),
    "LDST_SHARED": _p("LDS*", "STS*"),
    "LDST_GLOBAL": _p("LDG*", "STG*"),
    "CONST": (_CONST_OPERAND, OpcodePattern("LDC*")),
    "BAR": _p("BAR*"),
    "MEMBAR": _p("MEMBAR*", "FENCE*", "ERRBAR*", "CCTL*"),
    # ---- application kernels
    "SUBSEQ_ALU": _p("IADD3", "VIADD", "IMAD.IADD", "IMNMX*", "VIMNMX*", "LDS*"),
    "ANY": _p("*"),
}

#: per-architecture replacements of a class (arch -> target -> patterns)
ARCH_OVERRIDES: dict[str, dict[str, tuple[OpcodePattern, ...]]] = {
    # sm_90: ptxas reads __constant__ words into uniform registers (ULDC.64, two words per
    # instruction) and consumes them from there instead of as c[0x3] operands; the class
    # is the load plus the instruction that consumes the uniform register.
    "sm_90": {
        "CONST": (
            _CONST_OPERAND,
            OpcodePattern("LDC*"),
            OpcodePattern("ULDC*", r"c\[0x3\]"),
            OpcodePattern("FADD*", r"\bUR\d+"),
            OpcodePattern("FFMA*", r"\bUR\d+"),
            OpcodePattern("IADD3*", r"\bUR\d+"),
        ),
    },
}


def opcode_class(target: str, arch: str) -> tuple[OpcodePattern, ...]:
    """The opcode patterns of ``target`` on ``arch``.

    Raises
    ------
    KernelCompileError
        If ``target`` is not a known class (the message lists them).
    """
    override = ARCH_OVERRIDES.get(arch, {})
    if target in override:
        return override[target]
    if target in OPCODE_CLASSES:
        return OPCODE_CLASSES[target]
    raise KernelCompileError(
        f"unknown purity target {target!r}; known: {', '.join(sorted(OPCODE_CLASSES))} "
        f"(add it to perfml.kernels.sass.OPCODE_CLASSES)"
    )


@dataclass(frozen=True)
class Instruction:
    """One SASS instruction."""

    address: int
    opcode: str  # with modifiers, e.g. "FMUL.RZ"
    operands: str
    predicate: str = ""  # e.g. "@!P0"

    @property
    def base(self) -> str:
        return self.opcode.split(".", 1)[0]

    @property
    def branch_label(self) -> str | None:
        if self.base not in ("BRA", "BRX", "JMP", "CALL", "BSSY", "BREAK", "SSY", "PBK"):
            return None
        m = re.search(r"`\(([^)]+)\)", self.operands)
        return m.group(1) if m else None


@dataclass(frozen=True)
class Loop:
    """A loop: the instructions from a backward branch's target through the branch."""

    start: int
    end: int  # address of the backward branch
    instructions: tuple[Instruction, ...]

    def contains(self, other: Loop) -> bool:
        return self.start <= other.start and other.end <= self.end and self != other


@dataclass(frozen=True)
class SassFunction:
    """A kernel's instructions and labels."""

    name: str
    instructions: tuple[Instruction, ...]
    labels: Mapping[str, int] = field(default_factory=dict)

    def body(self) -> tuple[Instruction, ...]:
        """All instructions except the trailing self-branch and ``NOP`` padding."""
        ins = list(self.instructions)
        while ins and ins[-1].opcode == "NOP":
            ins.pop()
        if ins and ins[-1].base == "BRA" and ins[-1].branch_label is not None:
            target = self.labels.get(ins[-1].branch_label)
            if target == ins[-1].address:
                ins.pop()
        return tuple(ins)

    def histogram(self, instructions: Iterable[Instruction] | None = None) -> Counter[str]:
        return Counter(i.opcode for i in (self.instructions if instructions is None
                                          else instructions))


_INS_RE = re.compile(
    r"^\s*/\*(?P<addr>[0-9a-fA-F]{4,})\*/\s+(?P<pred>@!?U?P[T0-9]+\s+)?(?P<op>[A-Z][A-Z0-9_.]*)"
    r"(?P<rest>[^;]*);"
)
_LABEL_RE = re.compile(r"^\s*(?P<label>\.L_[A-Za-z0-9_]+):")
_FUNC_RE = re.compile(r"^\s*\.text\.(?P<name>[A-Za-z_$][\w$]*):")


def parse_sass(text: str) -> dict[str, SassFunction]:
    """Parse ``nvdisasm -c`` output into functions (by name)."""
    functions: dict[str, SassFunction] = {}
    name: str | None = None
    ins: list[Instruction] = []
    labels: dict[str, int] = {}
    pending: list[str] = []

    def flush() -> None:
        if name is not None:
            functions[name] = SassFunction(name, tuple(ins), dict(labels))

    for line in text.splitlines():
        m = _FUNC_RE.match(line)
        if m:
            flush()
            name, ins, labels, pending = m.group("name"), [], {}, []
            continue
        m = _LABEL_RE.match(line)
        if m:
            pending.append(m.group("label"))
            continue
        m = _INS_RE.match(line)
        if m and name is not None:
            addr = int(m.group("addr"), 16)
            for label in pending:
                labels[label] = addr
            pending = []
            ins.append(Instruction(addr, m.group("op"), m.group("rest").strip(),
                                   (m.group("pred") or "").strip()))
    flush()
    return functions


def disassemble(
    cubin: Path, *, nvdisasm: str | None = None, cache: bool = True
) -> dict[str, SassFunction]:
    """Disassemble a cubin with ``nvdisasm -c`` and parse it.

    With ``cache`` the text is kept next to the cubin (``<name>.sass``; cubins are
    content-addressed, so the text never goes stale) and reused.

    Raises
    ------
    ToolchainMissingError
        If ``nvdisasm`` is not installed (``pip install nvidia-cuda-nvdisasm``).
    KernelCompileError
        If ``nvdisasm`` fails.
    """
    cubin = Path(cubin)
    cached = cubin.with_suffix(".sass")
    if cache and cached.is_file():
        return parse_sass(cached.read_text(encoding="utf-8"))
    tool = nvdisasm or find_nvdisasm()
    if tool is None:
        raise ToolchainMissingError(
            "nvdisasm not found: install the CUDA toolkit or `pip install nvidia-cuda-nvdisasm`"
        )
    try:
        proc = subprocess.run([tool, "-c", str(cubin)], capture_output=True, text=True,
                              timeout=300)
    except (OSError, subprocess.SubprocessError) as exc:
        raise KernelCompileError(f"nvdisasm could not run on {cubin}: {exc}") from exc
    if proc.returncode != 0:
        raise KernelCompileError(f"nvdisasm failed on {cubin}: {proc.stderr.strip()}")
    if cache:
        tmp = cached.with_suffix(f".sass.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(proc.stdout, encoding="utf-8")
        os.replace(tmp, cached)
    return parse_sass(proc.stdout)


def find_loops(func: SassFunction) -> list[Loop]:
    """Every loop closed by a backward branch, as address intervals."""
    loops = []
    by_addr = func.instructions
    for ins in by_addr:
        label = ins.branch_label
        if ins.base != "BRA" or label is None:
            continue
        target = func.labels.get(label)
        if target is None or target >= ins.address:
            continue
        body = tuple(i for i in by_addr if target <= i.address <= ins.address)
        loops.append(Loop(target, ins.address, body))
    return loops


def innermost_loops(loops: Sequence[Loop]) -> list[Loop]:
    """Loops that contain no other loop."""
    return [lp for lp in loops if not any(lp.contains(o) for o in loops)]
