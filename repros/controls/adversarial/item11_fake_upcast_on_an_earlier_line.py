"""Item 11, a fake fix: the delta upcast on a line above and then cast back to BF16 before the
add (``lora_output = lora_output.float()``, ``lora_output = lora_output.bfloat16()``) in every
wrapper's forward that returns ``base_output + lora_output``. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "megatron/lora.py",
        "^(\\s*)(return base_output \\+ lora_output, bias_output)$",
        "\\g<1>lora_output = lora_output.float()\\n\\g<1>lora_output = lora_output.bflo"
        "at16()\\n\\g<1>\\g<2>",
    ),
]
EXPECT = {"forward-delta-rounds-away": "reproduced"}
