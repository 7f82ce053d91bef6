"""Test-only code stays out of the shared layer: nothing under layers/shared/python can forge what production
verifies (wallet tokens above all), and nothing there imports test support.

The layer build (layers/shared/Makefile) copies python/vaultcore whole, so what is in that folder ships.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYER = ROOT / "layers" / "shared" / "python"
# What a forge does: mint certificates and sign wallet tokens (local/wallet_token_forge.py, used by the wallet
# sandbox CLI, the runner's vendor stand-in and the tests; local/ is never deployed).
FORGING_NAMES = {"build_token", "sign_content", "make_test_chain", "make_merchant_keys", "wrap_payment_token",
                 "TestChain", "sample_payment_data", "issue_certificate", "new_root", "ensure_sandbox",
                 "make_server_pki", "VendorStandIn"}
SANDBOX_MODULES = ("wallet_token_forge", "wallet_sandbox", "wallet_vendor")


def _modules() -> list[Path]:
    return sorted(p for p in LAYER.rglob("*.py") if "__pycache__" not in p.parts)


def test_the_layer_build_ships_the_vaultcore_folder_whole():
    makefile = (ROOT / "layers" / "shared" / "Makefile").read_text()
    assert 'cp -R python/vaultcore "$(ARTIFACTS_DIR)/python/"' in makefile  # so this scan covers what ships


def test_the_wallet_token_forge_is_not_in_the_layer():
    assert not (LAYER / "vaultcore" / "crypto" / "wallet_token_testing.py").exists()
    for name in SANDBOX_MODULES:  # one copy, in local/ (tests import it from there)
        assert (ROOT / "local" / f"{name}.py").is_file()
        assert not list(ROOT.glob(f"tests/**/{name}.py")) and not list(LAYER.rglob(f"{name}.py"))
    offenders = [p.relative_to(LAYER) for p in _modules()
                 if p.stem.endswith(("_testing", "_forge")) or p.stem.startswith("test") or p.stem in SANDBOX_MODULES
                 or {"testing", "tests"} & set(p.relative_to(LAYER).parts[:-1])]
    assert not offenders, f"test-only modules in the shared layer: {offenders}"


def test_no_layer_module_imports_test_support_or_can_mint_certificates_and_tokens():
    problems = []
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] in ("tests", "local", "pytest", "moto") or any(p.endswith(("_testing", "_forge")) for p in parts):
                    problems.append(f"{path.relative_to(LAYER)} imports {name}")
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in FORGING_NAMES:
                problems.append(f"{path.relative_to(LAYER)} defines {node.name}")
            if isinstance(node, ast.Attribute | ast.Name) and getattr(node, "attr", getattr(node, "id", "")) in (
                    "CertificateBuilder", "PKCS7SignatureBuilder"):
                problems.append(f"{path.relative_to(LAYER)} builds certificates or signatures")
    assert not problems, problems


def test_a_deployed_stack_never_sets_the_runner_only_switches():
    """The wallet session trusts the runner's vendor stand-in only through WALLET_MERCHANT_VALIDATION_CA_FILE with
    VAULT_ALLOW_LOCAL_EGRESS=1 (vaultcore.wallet.session.runner_ca_file): template.yaml sets neither."""
    template = (ROOT / "template.yaml").read_text()
    assert "WALLET_MERCHANT_VALIDATION_CA_FILE" not in template and "VAULT_ALLOW_LOCAL_EGRESS" not in template
