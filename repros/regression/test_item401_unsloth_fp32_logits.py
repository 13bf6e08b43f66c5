"""artbot follow-up 401 (audit item 4 on the Unsloth backend): calculate_logprobs, as compute_loss
calls it (with grad, the policy's call; without, the new logprobs', the reference's and the KL
reference adapter's), must give the log-probabilities of FP32 logits of its operands, not of
logits rounded to the operands' dtype, whatever the dtype (BF16 or FP16), whether the hidden
states require grad (training) or not, for a chunk over a real vocabulary (Qwen3's 151,936 ids)
as for a small one, and for hidden states as large as a real model's (|max| about 40 and 400)
as for small ones. A non-strict
xfail, as item 4's test is: for this symptom (BF16 LM-head logits) the audit decides no fix
(item 4 asks for a GPU A/B), and whether ART's GPU path hands this function BF16 hidden states
is unconfirmed (item 2). On 0.5.21 and 0.5.23 BF16 operands give a p90 error of 0.11 nats; a
fix is reported as an unexpected pass (XPASS) without failing ART's suite; a fix in the caller
counts. CPU only (a fix that acts differently on CUDA tensors is not seen): random operands whose
logits reach about 58, a stand-in trainer whose model returns them as its hidden states.

Domain: hidden dtype bfloat16/float16; vocab 2,048-151,936; hidden states of spread 1, 10 and
100. Oracle: float64 (the log-softmax of the float64 product of the same operands). Tolerance,
per token, as artbot's check holds it: |lp - lp64| <= 8 eps32 (sqrt(H) max_j (|h| @ |W|)_j +
|lse64|), an FP32-accumulated dot product's bound plus the FP32 log-softmax."""

import pytest

try:  # torch and ART's optional dependencies may be absent where ART's tests run: skip
    import contextlib
    import types

    import torch

    from art.unsloth.train import calculate_logprobs
except ModuleNotFoundError as missing:  # one of ART's own modules missing is a failure
    if (missing.name or "art").partition(".")[0] == "art":
        raise
    pytest.skip(f"{missing.name} is not installed", allow_module_level=True)


# compute_loss's calls of calculate_logprobs: (inference_mode, no_grad, reference_logprobs,
# reference_adapter_name); with grad the first, without the others.
CALLS = [
    (False, False, False, None),
    (True, True, False, None),
    (True, False, True, None),
    (False, True, True, "kl_ref/adapter"),
]

CASES = [  # (positions, hidden size, vocabulary, chunk, hidden states' spread)
    (64, 256, 4096, 32, 1.0),
    (8, 8, 151_936, 8, 1.0),  # Qwen3's vocabulary: a chunk of 1.2M logits
    # Hidden states as large as a real model's final ones (|max| about 40, then 400), the head
    # as much smaller: the same logits, so the same rounding, whatever the activations' size.
    (64, 64, 2048, 16, 10.0),
    (64, 64, 2048, 16, 100.0),
]


@pytest.mark.filterwarnings("ignore:.*CUDA is not available")  # its autocast, on a CPU
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
    for inference_mode, no_grad, reference, adapter in CALLS[:1] if grad else CALLS[1:]:
        logprobs, _ = calculate_logprobs(
            dtype,
            trainer(hidden),
            ids,
            None,
            {},
            ids,
            lm_head_t,
            chunk_size=chunk,
            inference_mode=inference_mode,
            no_grad=no_grad,
            reference_logprobs=reference,
            reference_adapter_name=adapter,
        )
        judge(logprobs, hidden, lm_head_t, ids, f"{dtype}, grad {grad}, vocabulary {vocab}", grad)


def trainer(hidden: "torch.Tensor") -> object:
    """GRPOTrainer stood in for: its model returns ``hidden`` as its hidden states (Unsloth's
    ``.logits`` with UNSLOTH_RETURN_HIDDEN_STATES), its PEFT model switches adapters by name."""
    peft = types.SimpleNamespace(peft_config={}, active_adapter="default")
    peft.load_adapter = lambda path, adapter_name: peft.peft_config.update({adapter_name: path})
    peft.set_adapter = lambda name: setattr(peft, "active_adapter", name)
    peft.disable_adapter = contextlib.nullcontext

    def model(**_: object) -> object:
        return types.SimpleNamespace(logits=hidden.clone())

    unwrap = types.SimpleNamespace(unwrap_model=lambda *_, **__: peft)
    return types.SimpleNamespace(model=model, accelerator=unwrap)


def judge(
    logprobs: "torch.Tensor",
    hidden: "torch.Tensor",
    lm_head_t: "torch.Tensor",
    ids: "torch.Tensor",
    where: str,
    grad: bool,
) -> None:
    hidden_size = hidden.shape[-1]
    logits = hidden.detach().double() @ lm_head_t.double()
    exact = torch.log_softmax(logits, -1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    eps32 = torch.finfo(torch.float32).eps
    magnitude = (hidden.detach().double().abs() @ lm_head_t.double().abs()).amax(-1)
    bound = 8 * eps32 * (hidden_size**0.5 * magnitude + torch.logsumexp(logits, -1).abs())
    worst = float(((logprobs.detach().double() - exact).abs() / bound).max())
    where += f", hidden |max| {float(hidden.detach().abs().max()):.3g}"
    assert worst <= 1, f"{where}: logprob error {worst:.3g} x the FP32 bound"
    assert logprobs.requires_grad == grad, f"{where}: the logprobs carry no gradient"
