"""Answer verifiers of benchmarks from outside armlab's task families, and the votes of an item's answers (maj@k).

A verifier grades one answer against an item and says what it extracted: ``grade(item, response) -> Verdict``.
An answer nothing can be extracted from is wrong and counted (``unparsed``), an answer whose grading ran out of
time is wrong and counted (``timeout``); neither is dropped. ``same(a, b)`` says whether two extracted answers
are one answer, which the majority vote (maj@k) needs (``\\frac{1}{2}`` and ``0.5`` are one vote under math-verify).
``applies(item)`` says whether it can grade an item's answers at all (it reads the reference): ``armlab rescore``
re-grades every stored answer under each verifier that applies to it (armlab/experiment/rescore.py).

A new verifier is one :data:`VERIFIERS` entry: a :class:`Rule` of one extraction function (and a normalisation,
the shared :func:`latex_normalised` or :func:`decimal`), each with a one-line docstring naming its source, or a
class when it needs more (a package, timeouts, its own votes).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from armlab.registry import Registry

GRADED, UNPARSED, TIMEOUT = "graded", "unparsed", "timeout"
TIMEOUT_SECONDS = 5  # per parse and per comparison, math-verify's own default
# a reference's text set as text (\text{Monday}), whose words math-verify reads as one symbol
TEXT_COMMAND = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|mbox|operatorname)\s*\{[^{}]*\}")
PLAIN_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3,}")  # three letters or more, not a LaTeX command (\frac)


@dataclass(frozen=True)
class Verdict:
    correct: float
    extracted: str  # the answer the verifier read ("" when none)
    status: str = GRADED  # GRADED, UNPARSED or TIMEOUT


class Verifier:
    """What every verifier shares unless it says otherwise: no package beyond armlab's own, extracted answers that
    are one answer when their strings are equal, and references it can always read."""

    requirement: str | None = None  # the package it needs (pip name)
    extra: str | None = None  # the armlab extra that installs it

    def grade(self, item: Mapping, response: str) -> Verdict:
        raise NotImplementedError

    def same(self, a: str, b: str) -> bool:
        return a == b

    def reference_problem(self, answer: str) -> str | None:
        """Why the verifier cannot read the reference ``answer`` (checked before any job), or None."""
        return None

    def applies(self, item: Mapping) -> bool:
        """Whether it can grade the item's answers: it reads the item's reference (a rescore keeps the evaluation's
        verdicts on the items no verifier of it applies to)."""
        return self.reference_problem(str(item["answer"])) is None

    def same_of(self, item: Mapping) -> Callable[[str, str], bool]:
        """The ``same`` its votes on ``item``'s answers use."""
        return self.same


class UnreadableReference(ValueError):
    """A reference answer the verifier reads nothing from (refused before any job; here only as a last guard)."""


class MathVerify(Verifier):
    """math-verify (github.com/huggingface/Math-Verify): the boxed or final answer, equal by LaTeX, number or symbol.

    The answer is extracted from the ``\\boxed{}`` (two boxed answers are read as the set of both) or the
    final-answer expression and compared with the reference by LaTeX, numeric and symbolic equivalence (floats
    rounded to 6 digits), each step under a timeout."""

    requirement, extra = "math-verify", "eval"

    def __init__(self, timeout_seconds: int = TIMEOUT_SECONDS) -> None:
        self.timeout_seconds = timeout_seconds

    @staticmethod
    def _as_latex(text: str) -> str:
        # a reference written bare ("72", "\frac{1}{2}") is read as math, as math-verify's README asks of gold
        return text if "$" in text or "\\boxed" in text else f"${text}$"

    def _parse(self, text: str) -> list:
        from math_verify import parse

        return parse(text, parsing_timeout=self.timeout_seconds, raise_on_error=True)

    @functools.lru_cache(maxsize=4096)  # noqa: B019 (one verifier per process; an item's reference is parsed once)
    def _reference(self, answer: str) -> tuple:
        return tuple(self._parse(self._as_latex(answer)))

    def _equal(self, gold: Sequence, target: Sequence) -> bool:
        from math_verify import verify

        return verify(list(gold), list(target), timeout_seconds=self.timeout_seconds, raise_on_error=True)

    def grade(self, item: Mapping, response: str) -> Verdict:
        try:
            return self._verdict(str(item["answer"]), response)
        except UnreadableReference:
            item_id, answer = item.get("id"), item["answer"]
            raise ValueError(f"item {item_id}: math-verify cannot read its reference {answer!r}") from None

    @functools.lru_cache(maxsize=65536)  # noqa: B019 (a rescore grades the same short answers over and over)
    def _verdict(self, answer: str, response: str) -> Verdict:
        from math_verify.errors import TimeoutException

        try:
            target = self._parse(response)
            if not target:
                return Verdict(0.0, "", UNPARSED)
            extracted = str(target[-1])
            gold = self._reference(answer)
            if not gold:
                raise UnreadableReference(answer)
            return Verdict(float(self._equal(gold, target)), extracted)
        except TimeoutException:
            return Verdict(0.0, "", TIMEOUT)
        except ValueError:
            raise
        except Exception:  # noqa: BLE001 (math-verify raises whatever sympy raised on a malformed answer)
            return Verdict(0.0, "", UNPARSED)

    def reference_problem(self, answer: str) -> str | None:
        """Why math-verify cannot read ``answer`` as math: nothing read, only its raw text read back (math-verify's
        fallback for what it cannot parse: ``\\frac{1}{``), or a word outside ``\\text{}`` read as the product of
        its letters (``null`` as l*l*n*u, which any anagram equals)."""
        from math_verify.errors import TimeoutException

        try:
            read = self._reference(answer)
        except TimeoutException:
            return f"math-verify ran out of its {self.timeout_seconds} s reading it"
        except Exception as exc:  # noqa: BLE001 (whatever sympy raised on it)
            return f"math-verify cannot read it ({type(exc).__name__})"
        values = [value for value in read if not isinstance(value, str)]
        if not values:
            return "math-verify reads nothing from it" + (" but its raw text" if read else "")
        word = PLAIN_WORD.search(TEXT_COMMAND.sub(" ", answer))
        if word:
            return (
                f"math-verify reads the word {word[0]!r} as the product of its letters ({values[0]}), which any "
                f"anagram equals; write words as \\text{{{word[0]}}}"
            )
        return None

    @functools.lru_cache(maxsize=65536)  # noqa: B019 (votes compare each answer with every earlier one)
    def same(self, a: str, b: str) -> bool:
        from math_verify.errors import TimeoutException

        if a == b:
            return True
        try:
            left, right = self._reference(a), self._reference(b)  # each read once, as a reference is
            return bool(left and right and self._equal(left, right))
        except (TimeoutException, Exception):  # noqa: BLE001 (as in grade: no verdict is no vote together)
            return False


# the letter of a multiple-choice answer: "Answer: C" (simple-evals' ANSWER_PATTERN_MULTICHOICE, widened to A-J for
# MMLU-Pro's ten options), else a boxed letter, else "(C)" or "C)" or "C." standing alone
CHOICE_PATTERNS = (
    re.compile(r"(?i)answer[ \t]*(?:is)?[ \t]*:?[ \t]*\$?\(?([A-J])\)?\$?(?![A-Za-z])"),
    re.compile(r"\\boxed\{\s*(?:\\text\{)?\s*([A-J])\s*\}?\s*\}"),
    re.compile(r"(?<![A-Za-z])\(?([A-J])[).](?![A-Za-z])"),
)


class Choice(Verifier):
    """simple-evals' multiple-choice rule (GPQA, MMLU-Pro): the chosen letter is the key's.

    The chosen letter is the last "Answer: X" in the response, else its last ``\\boxed{X}``, else its last
    standalone "(X)"/"X)"/"X."; it applies to items whose reference is a letter A-J."""

    def reference_problem(self, answer: str) -> str | None:
        return None if re.fullmatch(r"[A-J]", answer.strip().upper()) else "not an option letter A-J"

    def grade(self, item: Mapping, response: str) -> Verdict:
        for pattern in CHOICE_PATTERNS:
            found = pattern.findall(response)
            if found:
                letter = found[-1].upper()
                return Verdict(float(letter == str(item["answer"]).strip().upper()), letter)
        return Verdict(0.0, "", UNPARSED)


class Exact(Verifier):
    """armlab's ``verify_exact``: the stripped response equals the stripped reference."""

    def grade(self, item: Mapping, response: str) -> Verdict:
        text = response.strip()
        if not text:
            return Verdict(0.0, "", UNPARSED)
        return Verdict(float(text == str(item["answer"]).strip()), text)


class ReasoningGym(Verifier):
    """reasoning-gym's own ``score_answer`` (github.com/open-thought/reasoning-gym), at full credit only.

    The item is rebuilt from its dataset, config, seed and index, the answer is the response's last
    ``<answer>…</answer>`` or else all of it, and it is correct at full credit (a partial score is wrong); no answer
    is unparsed."""

    requirement, extra = "reasoning-gym", "reasoning_gym"

    def grade(self, item: Mapping, response: str) -> Verdict:
        from armlab.training.reasoning_gym_tasks import score

        correct, answer = score(item, response)
        return Verdict(correct, answer) if answer else Verdict(0.0, "", UNPARSED)

    def applies(self, item: Mapping) -> bool:
        return "rg_dataset" in item  # an item drawn from a reasoning-gym generator, which rebuilds it


# ---- rules: an extraction and a normalisation ---------------------------------------------------------------------


@functools.lru_cache(maxsize=65536)  # votes compare each answer with every earlier one: normalise each once
def latex_normalised(text: str) -> str | None:
    """Equal strings after math-verify's LaTeX normalisation, which has MATH's fixes (latex2sympy2_extended).

    ``latex2sympy2_extended.normalize_latex``: Hendrycks et al.'s MATH fixes of ``\\frac12``, ``a/b`` and
    ``\\sqrt3``, units, ``\\left``/``\\right``, ``\\dfrac``, 0.5 as ``\\frac{1}{2}``; boxes kept; then every space
    removed, as MATH's ``strip_string`` does. None for an empty text."""
    from latex2sympy2_extended.math_normalization import NormalizationConfig, normalize_latex

    config = NormalizationConfig(basic_latex=True, units=True, malformed_operators=True, nits=True, boxed="none")
    normalised = re.sub(r"\s+", "", normalize_latex(text, config))
    return normalised or None


def decimal(text: str) -> str | None:
    """Equal exact decimals (18.0 is 18) after lm-eval GSM8K's exact_match drops ",", "$" and a trailing ".".

    The canonical form: "18.50", "18.5" and "$18.5" alike; None unless the text is one decimal number."""
    cleaned = text.strip().replace(",", "").replace("$", "").rstrip(".")
    if not re.fullmatch(r"-?(\d+\.?\d*|\.\d+)", cleaned):
        return None
    try:
        number = Decimal(cleaned)
    except InvalidOperation:
        return None
    return format(number.normalize(), "f") if number else "0"


def last_boxed(response: str) -> str | None:
    """Only the last ``\\boxed{}`` (or ``\\fbox{}``), braces matched: MATH's ``last_boxed_only_string`` (Hendrycks+21).

    None without one, or when it is not closed."""
    start = max(response.rfind("\\boxed"), response.rfind("\\fbox"))
    opening = response.find("{", start)
    if start < 0 or opening < 0 or response[start:opening].strip() not in ("\\boxed", "\\fbox"):
        return None
    depth = 0
    for position in range(opening, len(response)):
        depth += {"{": 1, "}": -1}.get(response[position], 0)
        if depth == 0:
            return response[opening + 1 : position]
    return None


NUMBER = re.compile(r"(-?[$0-9.,]{2,})|(-?[0-9]+)")  # lm-eval's GSM8K flexible-extract pattern


def last_number(response: str) -> str | None:
    """The last number anywhere in the response: lm-eval GSM8K's ``flexible-extract`` filter.

    The last match of ``(-?[$0-9.,]{2,})|(-?[0-9]+)``, whatever surrounds it; None without a digit."""
    found = [match.group(0) for match in NUMBER.finditer(response) if re.search(r"\d", match.group(0))]
    return found[-1] if found else None


def whole_response(response: str) -> str | None:
    """The whole response, stripped: exact match's reading (lm-eval's ``exact_match``, armlab's ``verify_exact``).

    None when it is empty."""
    return response.strip() or None


@dataclass(frozen=True)
class Rule(Verifier):
    """A verifier of two functions: ``extract`` reads the answer from a response (None: unparsed), ``normalise``
    gives an answer or reference its canonical form (None: unreadable); an answer is right, and two answers are one
    vote, when their canonical forms are equal; it applies to items whose reference ``normalise`` reads."""

    extract: Callable[[str], str | None]
    normalise: Callable[[str], str | None]
    requirement: str | None = None
    extra: str | None = None

    def grade(self, item: Mapping, response: str) -> Verdict:
        extracted = self.extract(response)
        if extracted is None:
            return Verdict(0.0, "", UNPARSED)
        found = self.normalise(extracted)
        if found is None:
            return Verdict(0.0, extracted, UNPARSED)
        return Verdict(float(found == self.normalise(str(item["answer"]))), extracted)

    def same(self, a: str, b: str) -> bool:
        return a == b or (self.normalise(a) is not None and self.normalise(a) == self.normalise(b))

    def reference_problem(self, answer: str) -> str | None:
        return None if self.normalise(answer) is not None else f"{self.normalise.__name__} reads nothing from it"


class LmEval(Verifier):
    """lm-eval's own filter and metric, as the evaluation applied them: the configured grading, re-derived.

    Each answer of armlab's and the external benchmarks is re-graded by its task config's ``process_results`` (the
    benchmark's own verifier, evals/lm_eval_tasks.py); the tasks of ``eval.lm_eval_tasks`` keep the metric lm-eval
    logged under their configured filter. A rescore under it reproduces the evaluation: a check of the rescore."""

    def grade(self, item: Mapping, response: str) -> Verdict:
        return grade(item, response)

    def same_of(self, item: Mapping) -> Callable[[str, str], bool]:
        return same_answer(item)

    def applies(self, item: Mapping) -> bool:
        return "id" in item and "benchmark" in item  # armlab's task configs' docs, not eval.lm_eval_tasks' items


VERIFIERS: Registry[Verifier] = Registry(
    "verifier",
    {
        "math_verify": MathVerify(),
        "choice": Choice(),
        "exact": Exact(),
        "reasoning_gym": ReasoningGym(),
        "boxed": Rule(last_boxed, latex_normalised, "math-verify", "eval"),  # latex2sympy2_extended comes with it
        "last_number": Rule(last_number, decimal),
        "normalised_exact": Rule(whole_response, latex_normalised, "math-verify", "eval"),
        "lm_eval": LmEval(),
    },
)


def rule_of(verifier: Verifier) -> str:
    """What a verifier does, in one line: its docstring's first line (a :class:`Rule`: its two functions')."""
    if isinstance(verifier, Rule):
        compared = _first_line(verifier.normalise)
        return f"{_first_line(verifier.extract)} Compared: {compared[0].lower()}{compared[1:]}"
    return _first_line(type(verifier))


def _first_line(thing: object) -> str:
    return (thing.__doc__ or "").strip().splitlines()[0]


def vote_classes(verdicts: Sequence[Verdict], same) -> list[int]:
    """Each answer's vote for maj@k (self-consistency, Wang et al. 2023): answers that ``same`` calls one answer
    share a number (0, 1, ... in order of first appearance); an unparsed or timed-out answer is -1 and does not
    vote. The analysis counts the votes of an item's first k answers (analysis/samples/sampled.py ``majority_at_k``)."""
    representatives: list[str] = []
    votes = []
    for verdict in verdicts:
        if verdict.status != GRADED:
            votes.append(-1)
            continue
        for number, representative in enumerate(representatives):
            if same(representative, verdict.extracted):
                votes.append(number)
                break
        else:
            votes.append(len(representatives))
            representatives.append(verdict.extracted)
    return votes


def grade(item: Mapping, response: str) -> Verdict:
    """One answer's verdict: by the item's ``verifier`` (external benchmarks), else by its armlab task family's
    exact verifier (the stripped response is what it read; an empty one is unparsed)."""
    if item.get("verifier"):
        return VERIFIERS[item["verifier"]].grade(item, response)
    from armlab.training.tasks import verify

    text = response.strip()
    return Verdict(verify(item["task"], item["answer"], response), text, GRADED if text else UNPARSED)


def same_answer(item: Mapping):
    """The ``same`` of the item's verifier (armlab's families: equal strings)."""
    return VERIFIERS[item.get("verifier") or "exact"].same
