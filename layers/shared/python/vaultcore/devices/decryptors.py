"""The device-decryption port and its two adapters (DESIGN.md §4).

- :class:`SoftwareDukpt`: the BDK is unwrapped by KMS (cached per container for a bounded time) and DUKPT runs
  in this process. For cert and local use.
- :class:`PaymentCryptographyDukpt`: AWS Payment Cryptography ``DecryptData`` with DUKPT attributes; the BDK
  never leaves the HSM (PCI P2PE wants decryption inside an HSM). Selected for devices whose BDK is
  registered by ``hsmKeyArn``.

Both answer the same question: the plaintext of ``ciphertext`` under the device's BDK and this KSN. The
cipher is the BDK scheme's own (TDES-CBC for a TDES BDK, AES-CBC for AES DUKPT) unless the payload says
otherwise: ID TECH readers with TDES DUKPT keys can be set to AES-CBC (enhanced format field 8 bit 4), and
then the 16-byte TDES DUKPT data key is the AES-128 key ("using either TDES-CBC or AES-CBC with initial vector
of 0 ... the key used for encrypting data is called the Data Key", SecureMag / MS246 user manuals).
"""

from __future__ import annotations

from typing import Protocol

from vaultcore.crypto import dukpt, dukpt_aes
from vaultcore.devices.registry import Bdk, bdk_key_material
from vaultcore.errors import DependencyError, ValidationError

__all__ = ["Decryptor", "SoftwareDukpt", "PaymentCryptographyDukpt", "decryptor_for", "cipher_usable"]

# Which payload ciphers a BDK scheme can decrypt: its own, and AES-CBC under a TDES DUKPT data key (ID TECH).
_CIPHERS = {"tdes": ("tdes", "aes"), "aes128": ("aes",), "aes256": ("aes",)}
_NATIVE = {"tdes": "tdes", "aes128": "aes", "aes256": "aes"}


def cipher_usable(scheme: str, cipher: str | None) -> bool:
    """Whether a device with a BDK of ``scheme`` can decrypt data the payload says is ``cipher`` (None: its own)."""
    return cipher is None or cipher in _CIPHERS.get(scheme, ())


class Decryptor(Protocol):
    def decrypt(self, bdk: Bdk, ksn: bytes, ciphertext: bytes, variant: str, cipher: str | None = None,
                iv: bytes | None = None) -> bytes: ...


class SoftwareDukpt:
    def decrypt(self, bdk: Bdk, ksn: bytes, ciphertext: bytes, variant: str, cipher: str | None = None,
                iv: bytes | None = None) -> bytes:
        """``iv``: a device's non-zero CBC vector (Decryptx ``cbcVector``); None is the zero vector."""
        if cipher is None or cipher == _NATIVE[bdk.scheme]:
            return dukpt.decrypt(bdk.scheme, bdk_key_material(bdk), ksn, ciphertext, variant, iv)
        if not cipher_usable(bdk.scheme, cipher):
            raise ValueError("this cipher cannot be used with this BDK scheme")  # callers check cipher_usable
        # TDES DUKPT data key used as an AES-128 key (see the module docstring).
        if not ciphertext or len(ciphertext) % dukpt_aes.BLOCK_SIZE:
            raise dukpt.DecryptionError("ciphertext length must be a positive multiple of 16 bytes", code=2601)
        key = dukpt.data_key(bdk.scheme, bdk_key_material(bdk), ksn, variant)
        return dukpt_aes.aes_cbc_decrypt(key, ciphertext)


# AWS Payment Cryptography names (DukptAttributes): derivation type per scheme, variant per key variant.
_APC_DERIVATION = {"tdes": "TDES_2KEY", "aes128": "AES_128", "aes256": "AES_256"}
_APC_VARIANT = {"data": "REQUEST", "data_response": "RESPONSE"}


class PaymentCryptographyDukpt:
    def __init__(self, client: object | None = None) -> None:
        self._client = client  # the seam tests use (botocore Stubber)

    def _api(self) -> object:
        if self._client is None:
            from vaultcore.store.aws import client

            self._client = client("payment-cryptography-data")
        return self._client

    def decrypt(self, bdk: Bdk, ksn: bytes, ciphertext: bytes, variant: str, cipher: str | None = None,
                iv: bytes | None = None) -> bytes:
        from botocore.exceptions import BotoCoreError, ClientError

        if variant not in _APC_VARIANT:
            raise ValidationError("This device's key variant is not available with HSM keys.", code=2605)
        if cipher is not None and cipher != _NATIVE[bdk.scheme]:
            # DecryptData derives and uses the key of the BDK's own algorithm only.
            raise ValidationError("This payload's cipher is not available with HSM keys.", code=2605)
        block = dukpt.block_size(bdk.scheme)
        if iv is not None and len(iv) != block:
            raise dukpt.DecryptionError(f"IV must be {block} bytes", code=2602)
        try:
            out = self._api().decrypt_data(  # type: ignore[attr-defined]
                KeyIdentifier=bdk.hsm_key_arn, CipherText=ciphertext.hex().upper(),
                DecryptionAttributes={"Dukpt": {
                    "KeySerialNumber": ksn.hex().upper(), "Mode": "CBC",
                    "DukptKeyDerivationType": _APC_DERIVATION[bdk.scheme],
                    "DukptKeyVariant": _APC_VARIANT[variant],
                    "InitializationVector": iv.hex().upper() if iv is not None else "00" * block,
                }})
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in ("ValidationException",):
                raise ValidationError("The HSM could not decrypt this payload.", code=2600) from None
            raise DependencyError("Internal error: the decryption service is unreachable.", code=1) from None
        except BotoCoreError:
            raise DependencyError("Internal error: the decryption service is unreachable.", code=1) from None
        return bytes.fromhex(out["PlainText"])


_software = SoftwareDukpt()
_hsm: PaymentCryptographyDukpt | None = None


def decryptor_for(bdk: Bdk) -> Decryptor:
    global _hsm
    if bdk.hsm_key_arn:
        if _hsm is None:
            _hsm = PaymentCryptographyDukpt()
        return _hsm
    return _software
