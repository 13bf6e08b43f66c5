"""Item 11, a fake fix that holds on part of the domain: the wrapper the check runs adds in
FP32 and keeps it; the six other wrappers add in FP32 and cast the sum back to the input's
dtype (``.to(x.dtype)``), which rounds the delta away as the BF16 add did. artbot's control
(issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "megatron/lora.py",
        r"^(\s*)return base_output \+ lora_output, bias_output$",
        r"\g<1>return base_output.float() + lora_output.float(), bias_output",
    ),
    (
        "megatron/lora.py",
        r"^(\s*)return (linear_output|base|base_out) \+ (\w+), (\w+)$",
        r"\g<1>return (\g<2>.float() + \g<3>.float()).to(x.dtype), \g<4>",
    ),
]
EXPECT = {"forward-delta-rounds-away": "reproduced"}
