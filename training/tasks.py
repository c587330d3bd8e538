"""Synthetic verifiable task families in three domains (math, logic, science).

Each family is a generator ``(rng, **params) -> (question, answer)`` with
difficulty knobs as keyword parameters, and an exact verifier. A prompt is the
question text; the model answers with the answer text followed by ``EOS``.
New families are one function and one ``TASKS`` entry.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from armlab.registry import Registry

EOS = "\n"
PAD = "\0"
# the builtin policy's characters (training/policy.py), here so that a config's prompts are checked without torch
VOCAB = (
    PAD + EOS + " " + "0123456789" + "abcdefghijklmnopqrstuvwxyz" + "ABCDEFGHIJKLMNOPQRSTUVWXYZ" + "+-*/%=<>?&|!().,:"
)


def character_prompt_problem(prompt: str, max_len: int, new: int, budget: str) -> str | None:
    """Why a model of armlab's characters (the builtin policy, its export, TRL's tiny Qwen2) cannot take ``prompt``
    and ``new`` more characters (``budget`` names them) within ``max_len`` (``model.max_len``), or None."""
    outside = sorted(set(prompt) - set(VOCAB))
    if outside:
        return f"the character-level model cannot read its prompt (characters {outside[:5]} are not in its vocabulary)"
    if len(prompt) + new > max_len:
        return (
            f"its prompt of {len(prompt)} characters and {budget} {new} exceed the character-level model's "
            f"model.max_len {max_len}"
        )
    return None


@dataclass(frozen=True)
class TaskFamily:
    domain: str
    generate: Callable[..., tuple[str, str]]
    verify: Callable[[str, str], float]
    description: str


def _digits(rng: np.random.Generator, n: int) -> int:
    """A uniformly drawn non-negative integer with at most ``n`` digits."""
    return int(rng.integers(0, 10**n))


def verify_integer(answer: str, response: str) -> float:
    """1.0 iff the response (whitespace stripped) is the integer ``answer``, written without sign tricks."""
    text = response.strip()
    return float(re.fullmatch(r"-?\d+", text) is not None and int(text) == int(answer))


def verify_exact(answer: str, response: str) -> float:
    """1.0 iff the response (whitespace stripped) equals ``answer`` exactly."""
    return float(response.strip() == answer)


# ---- math -------------------------------------------------------------------


def gen_add(rng, digits: int = 2):
    a, b = _digits(rng, digits), _digits(rng, digits)
    return f"{a}+{b}=", str(a + b)


def gen_sub(rng, digits: int = 2):
    a, b = sorted((_digits(rng, digits), _digits(rng, digits)), reverse=True)
    return f"{a}-{b}=", str(a - b)


def gen_round(rng, digits: int = 3):
    """A number of at most ``digits`` digits rounded to the nearest ten, halves up."""
    n = _digits(rng, digits)
    return f"round {n}=", str((n + 5) // 10 * 10)


def gen_mul(rng, digits: int = 2):
    a, b = int(rng.integers(2, 10)), _digits(rng, digits)
    return f"{a}*{b}=", str(a * b)


def gen_floordiv(rng, digits: int = 4, max_power: int = 2):
    """A number of at most ``digits`` digits divided by 10^k, 1 <= k <= ``max_power``, rounded down."""
    n, k = _digits(rng, digits), int(rng.integers(1, max_power + 1))
    return f"{n}//{10**k}=", str(n // 10**k)


def gen_sum3(rng, digits: int = 1):
    a, b, c = (_digits(rng, digits) for _ in range(3))
    return f"{a}+{b}+{c}=", str(a + b + c)


def gen_mod(rng, digits: int = 2):
    a, b = _digits(rng, digits), int(rng.integers(2, 10))
    return f"{a}%{b}=", str(a % b)


# ---- logic ------------------------------------------------------------------


OPERATORS = np.array(["&", "|"])


def gen_boolexpr(rng, terms: int = 3, precedence: bool = False):
    """T/F literals joined by & and |, evaluated left to right, or with & binding tighter when ``precedence``."""
    values = rng.integers(0, 2, size=terms).astype(bool)
    ops = OPERATORS[rng.integers(0, 2, size=terms - 1)]  # rng.choice(["&", "|"]) draws the same, slower
    text = "TF"[not values[0]] + "".join(op + "TF"[not v] for op, v in zip(ops, values[1:]))
    if precedence:
        result = any(all(c == "T" for c in conjunct) for conjunct in text.replace("&", "").split("|"))
    else:
        result = bool(values[0])
        for op, value in zip(ops, values[1:]):
            result = (result and value) if op == "&" else (result or value)
    return f"{text}=", "T" if result else "F"


def gen_sort(rng, length: int = 4):
    xs = rng.integers(0, 10, size=length)
    return "sort " + "".join(map(str, xs)) + "=", "".join(map(str, sorted(xs)))


def gen_max(rng, length: int = 5):
    xs = rng.integers(0, 10, size=length)
    return "max " + "".join(map(str, xs)) + "=", str(int(xs.max()))


def gen_reverse(rng, length: int = 4):
    letters = rng.choice(list("abcdefghij"), size=length)
    return "rev " + "".join(letters) + "=", "".join(letters[::-1])


def gen_count(rng, length: int = 8):
    """How often a given digit occurs in a string of digits."""
    xs = rng.integers(0, 10, size=length)
    target = int(rng.integers(0, 10))
    return f"count {target} " + "".join(map(str, xs)) + "=", str(int((xs == target).sum()))


def gen_second(rng, length: int = 6):
    """The second-largest distinct digit of a string of digits (at least two distinct digits)."""
    while True:
        xs = rng.integers(0, 10, size=length)
        distinct = sorted(set(xs.tolist()))
        if len(distinct) >= 2:
            return "second " + "".join(map(str, xs)) + "=", str(distinct[-2])


def gen_parity(rng, length: int = 6):
    """Parity (0 even, 1 odd) of the number of ones in a bit string."""
    bits = rng.integers(0, 2, size=length)
    return "parity " + "".join(map(str, bits)) + "=", str(int(bits.sum() % 2))


# ---- science ----------------------------------------------------------------

ELEMENTS = ["H", "C", "N", "O", "S", "P", "Na", "Cl", "K", "Ca"]


def gen_atoms(rng, elements: int = 2, max_count: int = 4):
    """Count the atoms in a formula such as ``C2H6O``."""
    picked = rng.choice(ELEMENTS, size=elements, replace=False)
    counts = rng.integers(1, max_count + 1, size=elements)
    formula = "".join(e + (str(c) if c > 1 else "") for e, c in zip(picked, counts))
    return f"atoms {formula}=", str(int(counts.sum()))


def gen_element(rng, elements: int = 3, max_count: int = 9):
    """How many atoms of one named element a formula such as ``C2H6O`` holds."""
    picked = rng.choice(ELEMENTS, size=elements, replace=False)
    counts = rng.integers(1, max_count + 1, size=elements)
    formula = "".join(e + (str(c) if c > 1 else "") for e, c in zip(picked, counts))
    asked = int(rng.integers(0, elements))
    return f"{picked[asked]} in {formula}=", str(int(counts[asked]))


def gen_sci(rng, digits: int = 3, max_exponent: int = 2):
    """Scientific notation written out: ``34e2`` is 3400 (≤ ``digits`` mantissa digits, exponent ≤ ``max_exponent``)."""
    m, e = _digits(rng, digits), int(rng.integers(0, max_exponent + 1))
    return f"{m}e{e}=", str(m * 10**e)


def gen_decimal(rng, digits: int = 4, max_exponent: int = 2):
    """A number times 10^-k written as a decimal with k places: ``47e-2`` is 0.47 (1 <= k <= ``max_exponent``)."""
    m, k = _digits(rng, digits), int(rng.integers(1, max_exponent + 1))
    return f"{m}e-{k}=", f"{m // 10**k}.{m % 10**k:0{k}d}"


def gen_ohm(rng, max_current: int = 9, max_resistance: int = 99):
    """Ohm's law: V = I * R."""
    i, r = int(rng.integers(1, max_current + 1)), int(rng.integers(1, max_resistance + 1))
    return f"V I={i} R={r}=", str(i * r)


UNIT_FACTORS = {"km>m": 1000, "m>cm": 100, "kg>g": 1000, "m>mm": 1000, "L>mL": 1000, "h>min": 60}
CONVERSIONS = np.array(sorted(UNIT_FACTORS))


def gen_units(rng, digits: int = 1):
    conversion = str(CONVERSIONS[rng.integers(0, len(CONVERSIONS))])  # as rng.choice, without its overhead
    value = int(rng.integers(1, 10**digits))
    return f"{value}{conversion}=", str(value * UNIT_FACTORS[conversion])


def gen_force(rng, terms: int = 3, max_value: int = 9):
    """Net force along a line: the signed sum of ``terms`` forces."""
    forces = rng.integers(-max_value, max_value + 1, size=terms)
    return "F " + ",".join(map(str, forces)) + "=", str(int(forces.sum()))


def gen_speed(rng, max_speed: int = 50, max_time: int = 9):
    """Speed from distance and time, v = d / t, with an exact quotient."""
    v, t = int(rng.integers(1, max_speed + 1)), int(rng.integers(1, max_time + 1))
    return f"v d={v * t} t={t}=", str(v)


TASKS: Registry[TaskFamily] = Registry(
    "task family",
    {
        "add": TaskFamily("math", gen_add, verify_integer, "a+b with `digits`-digit operands"),
        "sub": TaskFamily("math", gen_sub, verify_integer, "a-b, a>=b, `digits`-digit operands"),
        "round": TaskFamily("math", gen_round, verify_integer, "a number of at most `digits` digits rounded to tens"),
        "mul": TaskFamily("math", gen_mul, verify_integer, "one-digit times `digits`-digit"),
        "floordiv": TaskFamily("math", gen_floordiv, verify_integer, "at most `digits` digits floor-divided by 10^k"),
        "sum3": TaskFamily("math", gen_sum3, verify_integer, "a+b+c with `digits`-digit operands"),
        "mod": TaskFamily("math", gen_mod, verify_integer, "`digits`-digit a modulo one-digit b"),
        "boolexpr": TaskFamily(
            "logic", gen_boolexpr, verify_exact, "T/F with & and |, `terms` literals, optional `precedence`"
        ),
        "sort": TaskFamily("logic", gen_sort, verify_exact, "sort `length` digits ascending"),
        "max": TaskFamily("logic", gen_max, verify_exact, "largest of `length` digits"),
        "reverse": TaskFamily("logic", gen_reverse, verify_exact, "reverse `length` letters"),
        "count": TaskFamily("logic", gen_count, verify_integer, "occurrences of a digit among `length` digits"),
        "second": TaskFamily("logic", gen_second, verify_exact, "second-largest distinct digit of `length` digits"),
        "parity": TaskFamily("logic", gen_parity, verify_exact, "parity of a `length`-bit string"),
        "atoms": TaskFamily("science", gen_atoms, verify_integer, "atoms in a formula of `elements` elements"),
        "element": TaskFamily("science", gen_element, verify_integer, "atoms of one element in a formula"),
        "sci": TaskFamily("science", gen_sci, verify_integer, "a number in scientific notation written out"),
        "decimal": TaskFamily("science", gen_decimal, verify_exact, "a number times 10^-k written as a decimal"),
        "ohm": TaskFamily("science", gen_ohm, verify_integer, "V = I*R, I <= `max_current`, R <= `max_resistance`"),
        "units": TaskFamily("science", gen_units, verify_integer, "unit conversion of a `digits`-digit value"),
        "force": TaskFamily("science", gen_force, verify_integer, "signed sum of `terms` forces up to `max_value`"),
        "speed": TaskFamily("science", gen_speed, verify_integer, "v = d/t, v <= `max_speed`, t <= `max_time`"),
    },
)


def verify(task: str, answer: str, response: str) -> float:
    """Score ``response`` against the reference ``answer`` with the family's exact verifier."""
    return TASKS[task].verify(answer, response)
