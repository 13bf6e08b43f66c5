"""Follow-up 801, artbot's suggested fix: an old logprob whose log-ratio reaches the bound
(20, 10 where a logprob is FP16) is treated as missing, replaced by the detached new logprob as
a non-finite one is, so the sentinel's token is trained as if sampled under the current
policy. 0.5.20 (before item 8's fix) replaces only NaN: its control replaces non-finite and
sentinel old logprobs alike.
(artbot's control.)
"""

_STALE = (
    "(new_logprobs.detach() - old_logprobs >= "
    "(10.0 if torch.float16 in (new_logprobs.dtype, old_logprobs.dtype) else 20.0))"
)
_FIX = [
    (
        "loss.py",
        r"~torch\.isfinite\(old_logprobs\),",
        rf"~torch.isfinite(old_logprobs) | {_STALE},",
    )
]
FIX = {
    "0.5.20": [
        (
            "loss.py",
            r"(\n        )torch\.isnan\(old_logprobs\),",
            rf"\g<1>~torch.isfinite(old_logprobs) | {_STALE},",
        )
    ],
    "0.5.21": _FIX,
    "0.5.23": _FIX,
}
