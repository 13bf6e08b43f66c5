"""artbot follow-up 401 (audit item 4 on the Unsloth backend): _calculate_logprobs must give the
log-probabilities of FP32 logits of its operands, not of logits rounded to the operands' dtype,
whatever the dtype (BF16 or FP16), whether the hidden states require grad (training) or not,
for a chunk over a real vocabulary (Qwen3's 151,936 ids) as for a small one, and for hidden
states as large as a real model's (|max| about 40 and 400) as for small ones. A non-strict
xfail, as item 4's test is: for this symptom (BF16 LM-head logits) the audit decides no fix
(item 4 asks for a GPU A/B), and whether ART's GPU path hands this function BF16 hidden states
is unconfirmed (item 2). On 0.5.21 and 0.5.23 BF16 operands give a p90 error of 0.11 nats; a
fix is reported as an unexpected pass (XPASS) without failing ART's suite. CPU only: random
operands whose logits reach about 58.

Domain: hidden dtype bfloat16/float16; vocab 2,048-151,936; hidden states of spread 1, 10 and
100. Oracle: float64 (the log-softmax of the float64 product of the same operands). Tolerance,
per token, as artbot's check holds it: |lp - lp64| <= 8 eps32 (sqrt(H) max_j (|h| @ |W|)_j +
|lse64|), an FP32-accumulated dot product's bound plus the FP32 log-softmax."""

import pytest

try:  # torch and ART's optional dependencies may be absent where ART's tests run: skip
    import torch

    from art.unsloth.train import _calculate_logprobs
except ModuleNotFoundError as missing:  # one of ART's own modules missing is a failure
    if (missing.name or "art").partition(".")[0] == "art":
        raise
    pytest.skip(f"{missing.name} is not installed", allow_module_level=True)


CASES = [  # (positions, hidden size, vocabulary, chunk, hidden states' spread)
    (64, 256, 4096, 32, 1.0),
    (8, 8, 151_936, 8, 1.0),  # Qwen3's vocabulary: a chunk of 1.2M logits
    # Hidden states as large as a real model's final ones (|max| about 40, then 400), the head
    # as much smaller: the same logits, so the same rounding, whatever the activations' size.
    (64, 64, 2048, 16, 10.0),
    (64, 64, 2048, 16, 100.0),
]


@pytest.mark.xfail(
    strict=False,
    raises=AssertionError,
    reason="artbot follow-up 401 is open; as for item 4, the audit decides no fix",
)
def test_logprobs_come_from_fp32_logits() -> None:
    # One test over the whole domain: a fix for one dtype, grad mode or chunk size is no fix.
    for dtype in (torch.bfloat16, torch.float16):
        for grad in (False, True):
            for positions, hidden_size, vocab, chunk, spread in CASES:
                check(dtype, grad, positions, hidden_size, vocab, chunk, spread)


def check(
    dtype: torch.dtype,
    grad: bool,
    positions: int,
    hidden_size: int,
    vocab: int,
    chunk: int,
    spread: float,
) -> None:
    g = torch.Generator().manual_seed(0)
    hidden = (torch.randn(1, positions, hidden_size, generator=g) * spread).to(dtype)
    # Logits of the same size at every hidden size and spread.
    scale = 0.8 * (256 / hidden_size) ** 0.5 / spread
    lm_head_t = (torch.randn(hidden_size, vocab, generator=g) * scale).to(dtype)
    ids = torch.randint(0, vocab, (1, positions), generator=g)
    hidden.requires_grad_(grad)
    logprobs, _ = _calculate_logprobs(lm_head_t, hidden, ids, chunk)
    logits = hidden.detach().double() @ lm_head_t.double()
    exact = torch.log_softmax(logits, -1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    eps32 = torch.finfo(torch.float32).eps
    magnitude = (hidden.detach().double().abs() @ lm_head_t.double().abs()).amax(-1)
    bound = 8 * eps32 * (hidden_size**0.5 * magnitude + torch.logsumexp(logits, -1).abs())
    worst = float(((logprobs.detach().double() - exact).abs() / bound).max())
    where = (
        f"{dtype}, grad {grad}, vocabulary {vocab}, hidden |max| {float(hidden.abs().max()):.3g}"
    )
    assert worst <= 1, f"{where}: logprob error {worst:.3g} x the FP32 bound"
    assert logprobs.requires_grad == grad, f"{where}: the logprobs carry no gradient"
