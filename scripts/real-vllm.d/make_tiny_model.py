"""Write a tiny random-weight Llama model and its tokenizer to a directory.

    python make_tiny_model.py OUT_DIR

Nothing is downloaded: the tokenizer is a byte-level BPE trained here, in
process, on a few sentences, and the weights are random (seeded). The model
is only good for one thing: giving vLLM something real to load and run on
the CPU, fast, so that its serving code produces real responses with real
RequestStateStats. Its output is gibberish.
"""

import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast  # noqa: E402

SPECIALS = ["<unk>", "<s>", "</s>", "<|system|>", "<|user|>", "<|assistant|>"]

# A chat template vLLM can render: one tag line per message.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)

WORDS = (
    "the a an of to and in is it that for on with as was at by this be are from "
    "or have not you he she they we one all there their what so up out if about "
    "who get which go me when make can like time no just him know take people into "
    "year your good some could them see other than then now look only come its over "
    "think also back after use two how our work first well way even new want because "
    "any these give day most us model server prompt token cache speed sky sea colour "
    "fruit tree bird answer briefly plainly short sentence timings matter processed "
    "generated prefix keys values faster reported apart evaluated checking language"
).split()


def corpus():
    # Deterministic sentences over WORDS, with punctuation and digits, so the
    # merges cover what the test prompts contain.
    lines = []
    for i in range(2000):
        n = 5 + i % 11
        words = [WORDS[(i * 7 + k * 13) % len(WORDS)] for k in range(n)]
        lines.append(" ".join(words).capitalize() + (". " if i % 3 else "? ") + str(i))
    return lines


def build_tokenizer():
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=768,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        pad_token="</s>",
        additional_special_tokens=SPECIALS[3:],
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.model_max_length = 2048
    return fast


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    tokenizer = build_tokenizer()
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=64,
        max_position_embeddings=2048,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
        torch_dtype="float32",
    )
    model = LlamaForCausalLM(config)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    # vLLM reads the chat template from the tokenizer config; keep a copy as
    # a file too, for versions that look there.
    with open(os.path.join(out, "chat_template.jinja"), "w") as f:
        f.write(CHAT_TEMPLATE)
    n_params = sum(p.numel() for p in model.parameters())
    print(json.dumps({"dir": out, "vocab": len(tokenizer), "params": n_params}))


if __name__ == "__main__":
    main()
