"""Item 11, half a fix: only the attention output projection's wrapper (the one the check runs)
adds in FP32; six wrappers still add in BF16. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "megatron/lora.py",
        "^(\\s*)return base_output \\+ lora_output, bias_output$",
        "\\g<1>return base_output.float() + lora_output.float(), bias_output",
    ),
]
EXPECT = {"forward-delta-rounds-away": "reproduced"}
