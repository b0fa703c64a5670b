"""laya_torch.py - the official PyTorch decision model, built from a layad-dev checkpoint directory.

Shared by scripts/bench_torch_forward.py (speed) and scripts/torch_rows.py (precision). `build` does what
the official package's `Agent` does at load time: `laya.common.build_model(cfg, encoder_dir,
pretrained=False)` (transformers ModernBertModel with SDPA attention + the Laya head, nothing
initialised) then `load_state_dict(strict=True)` from model.safetensors. The model comes back in fp32 on the
CPU, in eval mode; callers choose the device and the precision policy (a cast, or autocast as
upstream serves) and whether to pin ModernBERT's reference_compile off as the Agent does.

If the official package cannot be imported, a local copy of the head (same modules, same state
dict names, laya-model.md section 5) is used, and `source` says so.
"""
import json
import os


def build_local(model_dir, cfg):
    """Fallback: ModernBertModel + the Laya head written out (same names as the checkpoint)."""
    import torch
    from torch import nn
    from transformers import AutoConfig, AutoModel

    ecfg = AutoConfig.from_pretrained(os.path.join(model_dir, "encoder"))
    enc = AutoModel.from_config(ecfg, attn_implementation="sdpa")

    class DecisionModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = enc
            d = ecfg.hidden_size
            layer = nn.TransformerEncoderLayer(d, d // 64, 4 * d, 0.0, batch_first=True, norm_first=True)
            self.head = nn.TransformerEncoder(layer, cfg.get("head_layers", 2), enable_nested_tensor=False)
            self.type_emb = nn.Embedding(3, d)
            self.scorer = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d), nn.GELU(), nn.Linear(d, 1))
            self.act_head = nn.Sequential(nn.Linear(d + 4, 256), nn.GELU(),
                                          nn.Linear(256, len(cfg.get("act_costs", {})) + 1))
            self.register_buffer("temperature", torch.ones(3))

        def forward(self, input_ids, attention_mask, marker_pos, marker_mask, qtype):
            h = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            h = h + self.type_emb(qtype)[:, None, :]
            pad = ~attention_mask.bool()
            for layer in self.head.layers:
                h = layer(h, src_key_padding_mask=pad)
            idx = marker_pos.clamp(min=0)[:, :, None].expand(-1, -1, h.size(-1))
            logits = self.scorer(torch.gather(h, 1, idx)).squeeze(-1).float()
            logits = logits.masked_fill(~marker_mask, -1e4)
            p = logits.softmax(-1)
            k = marker_mask.sum(-1).clamp(min=2).float()
            ent = -(p * p.clamp_min(1e-9).log()).sum(-1) / k.log()
            top = p.topk(min(2, p.size(-1)), -1).values
            top2 = top[:, 1] if top.size(-1) > 1 else torch.zeros_like(top[:, 0])
            feats = torch.stack([top[:, 0], top[:, 0] - top2, ent, k / 255.0], -1)
            act = self.act_head(torch.cat([h[:, 0].float(), feats], -1))
            return logits, act

    return DecisionModel()


def build(model_dir):
    """(model fp32 on cpu in eval mode, rl_agent_config dict, source string)."""
    from safetensors.torch import load_file

    with open(os.path.join(model_dir, "rl_agent_config.json")) as f:
        cfg = json.load(f)
    source = "official laya package"
    try:
        from laya.common import build_model
        import importlib.metadata as md
        source += " " + md.version("laya")
        model = build_model(cfg, encoder_dir=os.path.join(model_dir, "encoder"), pretrained=False)
    except Exception as e:  # noqa: BLE001 - any import/build failure falls back, and is reported
        source = "local head (laya import failed: %s)" % e
        model = build_local(model_dir, cfg)
    model.load_state_dict(load_file(os.path.join(model_dir, "model.safetensors")), strict=True)
    return model.eval(), cfg, source
