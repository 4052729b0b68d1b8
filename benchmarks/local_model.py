"""Throughput of the embedded model: ``LocalChatModel.invoke`` against raw llama-cpp-python.

Run from the repository root: ``python -m benchmarks.local_model`` (needs the ``local`` extra).

Every arm is a named callable that runs one prompt and returns the number of tokens it generated.
All arms share one loaded model, the same prompts, seed, sampling settings and ``max_tokens``;
after one warm-up call each, they run interleaved (the arm order rotating from step to step), each
call starting from an empty KV cache so that none profits from the prompt its predecessor left.
Throughput is generated tokens per second of wall time (prompt processing included); each arm's
ratio is the median, over steps, of its throughput over the raw ``Llama.create_chat_completion``
baseline's in the same step (adjacent in time, hence robust to other load on the machine).
To compare another path (e.g. the project's model seam), pass more arms:
``run(extra_arms=[Arm("seam", call)])``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from reasoning_graphs.local import LocalChatModel

PROMPTS = (
    "Write a short paragraph about the sea.",
    "Explain what a compiler does.",
    "Describe a walk in a forest in autumn.",
    "List some tips for learning to cook.",
)
MAX_TOKENS = 64
SEED = 0
ROUNDS = 3
TARGET = 0.95
BASELINE = "raw llama_cpp"


@dataclass(frozen=True)
class Arm:
    """One way of running a prompt through the model."""

    name: str
    call: Callable[[str], int]
    """Run one prompt; return the number of generated tokens."""


def default_arms(model: LocalChatModel) -> list[Arm]:
    """Return the baseline (raw llama-cpp-python), the LangChain arm and the seam arm (same model)."""
    llama = model.load_llama()
    sampling: dict[str, Any] = {
        "temperature": model.temperature,
        "top_p": model.top_p,
        "top_k": model.top_k,
        "min_p": model.min_p,
        "repeat_penalty": model.repeat_penalty,
        "seed": model.seed,
        "max_tokens": model.max_tokens,
    }

    def raw(prompt: str) -> int:
        response: Any = llama.create_chat_completion(
            messages=[{"role": "user", "content": prompt}], **sampling
        )
        return int(response["usage"]["completion_tokens"])

    def langchain(prompt: str) -> int:
        usage = model.invoke(prompt).usage_metadata
        assert usage is not None
        return usage["output_tokens"]

    from reasoning_graphs.models import ModelClient

    seam = ModelClient(model, model_id="local:smollm2")

    def through_seam(prompt: str) -> int:
        return seam.call(prompt).usage.output_tokens

    return [
        Arm(BASELINE, raw),
        Arm("LocalChatModel.invoke", langchain),
        Arm("the model seam (ModelClient.call)", through_seam),
    ]


Sample = dict[str, tuple[int, float]]
"""One interleaved step: generated tokens and seconds per arm, all on the same prompt."""


def measure(
    arms: Sequence[Arm], prompts: Sequence[str], rounds: int, *, before_each: Callable[[], None]
) -> list[Sample]:
    """Run every arm on every prompt ``rounds`` times, interleaved; return one sample per step.

    ``before_each`` runs untimed before every call (``Llama.reset`` here, so that no call reuses
    the previous call's prompt from the KV cache: that alone was worth about 10% per call).
    """
    for arm in arms:
        before_each()
        arm.call(prompts[0])
    samples: list[Sample] = []
    for step in range(rounds * len(prompts)):
        shift = step % len(arms)
        sample: Sample = {}
        for arm in (*arms[shift:], *arms[:shift]):
            before_each()
            start = time.perf_counter()
            tokens = arm.call(prompts[step % len(prompts)])
            sample[arm.name] = (tokens, time.perf_counter() - start)
        samples.append(sample)
    return samples


def run(extra_arms: Sequence[Arm] = (), *, rounds: int = ROUNDS) -> list[dict[str, Any]]:
    """Measure every arm against the raw baseline; return one row per non-baseline arm.

    ``ratio`` is the median over steps of the arm's throughput over the baseline's in the same
    step (adjacent in time, so robust to other load on the machine); ``tokens_per_s`` are totals.
    """
    model = LocalChatModel(model_path="smollm2", max_tokens=MAX_TOKENS, seed=SEED)
    arms = [*default_arms(model), *extra_arms]
    samples = measure(arms, PROMPTS, rounds, before_each=model.load_llama().reset)

    def rate(name: str) -> float:
        return sum(s[name][0] for s in samples) / sum(s[name][1] for s in samples)

    def step_rate(sample: Sample, name: str) -> float:
        tokens, seconds = sample[name]
        return tokens / seconds

    return [
        {
            "name": f"local_model: {arm.name} vs {BASELINE}",
            "ratio": statistics.median(step_rate(s, arm.name) / step_rate(s, BASELINE) for s in samples),
            "target": TARGET,
            "tokens_per_s": rate(arm.name),
            "baseline_tokens_per_s": rate(BASELINE),
            "tokens": sum(s[arm.name][0] for s in samples),
            "baseline_tokens": sum(s[BASELINE][0] for s in samples),
        }
        for arm in arms
        if arm.name != BASELINE
    ]


def main() -> None:
    """Print the load time and one line per compared arm."""
    start = time.perf_counter()
    LocalChatModel(model_path="smollm2").load_llama()
    print(f"load (import llama_cpp + model): {time.perf_counter() - start:.2f} s")
    for row in run():
        verdict = "ok" if row["ratio"] >= row["target"] else "BELOW TARGET"
        print(
            f"{row['name']}: {row['tokens_per_s']:.1f} vs {row['baseline_tokens_per_s']:.1f} tokens/s "
            f"({row['tokens']} vs {row['baseline_tokens']} tokens), median paired ratio {row['ratio']:.3f} "
            f"(target >= {row['target']}) {verdict}"
        )


if __name__ == "__main__":
    main()
