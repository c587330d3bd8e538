"""Answer verifiers of benchmarks from outside armlab's task families, and the votes of an item's answers (maj@k).

A verifier grades one answer against an item and says what it extracted: ``grade(item, response) -> Verdict``.
An answer nothing can be extracted from is wrong and counted (``unparsed``), an answer whose grading ran out of
time is wrong and counted (``timeout``); neither is dropped. ``same(a, b)`` says whether two extracted answers
are one answer, which the majority vote (maj@k) needs (``\\frac{1}{2}`` and ``0.5`` are one vote under math-verify).
A new verifier is one class and one :data:`VERIFIERS` entry.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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


class MathVerify(Verifier):
    """math-verify (Hugging Face, github.com/huggingface/Math-Verify): the answer is extracted from the
    ``\\boxed{}`` (two boxed answers are read as the set of both) or the final-answer expression and compared with
    the reference by LaTeX, numeric and symbolic equivalence (floats rounded to 6 digits), each step under a
    timeout."""

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
        from math_verify.errors import TimeoutException

        try:
            target = self._parse(response)
            if not target:
                return Verdict(0.0, "", UNPARSED)
            extracted = str(target[-1])
            gold = self._reference(str(item["answer"]))
            if not gold:
                raise ValueError(f"item {item.get('id')}: math-verify cannot read its reference {item['answer']!r}")
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

    def same(self, a: str, b: str) -> bool:
        from math_verify.errors import TimeoutException

        if a == b:
            return True
        try:
            left, right = self._parse(self._as_latex(a)), self._parse(self._as_latex(b))
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
    """Multiple choice (GPQA, MMLU-Pro; simple-evals' rule): the last "Answer: X" in the response, else its last
    ``\\boxed{X}``, else its last standalone "(X)"/"X)"/"X.", is the chosen letter; correct iff it is the key's."""

    def grade(self, item: Mapping, response: str) -> Verdict:
        for pattern in CHOICE_PATTERNS:
            found = pattern.findall(response)
            if found:
                letter = found[-1].upper()
                return Verdict(float(letter == str(item["answer"]).strip().upper()), letter)
        return Verdict(0.0, "", UNPARSED)


class Exact(Verifier):
    """The stripped response equals the stripped reference (armlab's own ``verify_exact``)."""

    def grade(self, item: Mapping, response: str) -> Verdict:
        text = response.strip()
        if not text:
            return Verdict(0.0, "", UNPARSED)
        return Verdict(float(text == str(item["answer"]).strip()), text)


class ReasoningGym(Verifier):
    """reasoning-gym's own ``score_answer`` of the dataset that generated the item (github.com/open-thought/
    reasoning-gym): the item is rebuilt from its dataset, config, seed and index, the answer is the response's last
    ``<answer>…</answer>`` or else all of it, and it is correct at full credit (a partial score is wrong); no answer
    is unparsed."""

    requirement, extra = "reasoning-gym", "reasoning_gym"

    def grade(self, item: Mapping, response: str) -> Verdict:
        from armlab.training.reasoning_gym_tasks import score

        correct, answer = score(item, response)
        return Verdict(correct, answer) if answer else Verdict(0.0, "", UNPARSED)


VERIFIERS: Registry[Verifier] = Registry(
    "verifier", {"math_verify": MathVerify(), "choice": Choice(), "exact": Exact(), "reasoning_gym": ReasoningGym()}
)


def vote_classes(verdicts: Sequence[Verdict], same) -> list[int]:
    """Each answer's vote for maj@k (self-consistency, Wang et al. 2023): answers that ``same`` calls one answer
    share a number (0, 1, ... in order of first appearance); an unparsed or timed-out answer is -1 and does not
    vote. The analysis counts the votes of an item's first k answers (analysis/sampled.py ``majority_at_k``)."""
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
