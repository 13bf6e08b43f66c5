"""Follow-up 801, a fake fix that holds on part of the domain (found by the red team of issue
#37): the fallback also replaces an old logprob whose log-ratio reaches the bound (the
suggested fix), but only when ``importance_sampling_level`` is "token"; at the sequence level
an old logprob of -9999 still gives a loss of about 4.85e8 (e^20). artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.21", "0.5.23")
_BOUND = "(10.0 if torch.float16 in (new_logprobs.dtype, old_logprobs.dtype) else 20.0)"
_LEVEL = 'experimental_config.get("importance_sampling_level", "token")'
EDITS = [
    (
        "loss.py",
        r"~torch\.isfinite\(old_logprobs\),",
        "~torch.isfinite(old_logprobs)\n"
        "        | (\n"
        f"            (new_logprobs.detach() - old_logprobs >= {_BOUND})\n"
        f'            & ({_LEVEL} == "token")\n'
        "        ),",
    ),
]
EXPECT = {"sentinel-dominates-loss": "reproduced"}
