"""Item 5, a fake fix: a post-accumulate-grad hook registered on each leaf that does nothing.
artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "megatron/lora.py",
        "^(\\s*)(self\\.B_T = torch\\.nn\\.Parameter\\(torch\\.zeros\\(b_shape, dtype=d"
        "type, device=device\\)\\)\\n)",
        "\\g<1>\\g<2>\\g<1>for _p in (self.A_T, self.B_T):\\n\\g<1>    _p.register_post"
        "_accumulate_grad_hook(lambda p: None)  # FP32 staging\\n",
    ),
]
EXPECT = {"bf16-gradient-accumulation": "reproduced"}
