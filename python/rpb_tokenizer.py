"""The tokenizer an rpb checkpoint stores, in Python: the ids rpb gives a text, and the text of ids.

    import rpb_torch                                     # or: import rpb_tokenizer (no torch needed)
    tok = rpb_torch.tokenizer("checkpoints/t/step_00000600.h5")
    ids = tok.encode("In the beginning")                 # the ids rpb gives the text (list of int)
    text = tok.decode(ids)                               # the text back (str)

A run of the text or passkey_text task (task.kind) stores its tokenizer in every checkpoint
(train/checkpoint/checkpoint.h): /data's attribute `tokenizer` names its kind (task.tokenizer), and the uint8
dataset /data/tokenizer_model holds its model, for the kinds that have one:
  - bytes: no model; id b is byte b (256 ids);
  - chars: the characters in id order, UTF-8; a character outside them cannot be encoded (ValueError);
  - sentencepiece: the serialized ModelProto, loaded through python3-sentencepiece (Debian's 0.1.97, the version
    of the libsentencepiece rpb links) and encoded a piece at a time as rpb encodes it (train/data/tokenizer.h
    encode_piece_end: a line, or a long line cut at a space), so the ids are rpb's; the pieces are checked to spell
    the text, as rpb checks them.
encode(text) gives the ids rpb gives the same text (`rpb generate`'s prompt, each document of `rpb eval`'s test
split); decode(ids) joins the ids' bytes (token_bytes) and reads them as UTF-8, each invalid sequence as U+FFFD, as
`rpb generate` prints them. A passkey_text model has 12 ids past the tokenizer's `vocab`: the key's digits 0-9, then
the <key> and <query> markers (train/data/passkey.h); they are not the tokenizer's and decode refuses them.

The stored model is untrusted input. rpb reads a SentencePiece model field by field before SentencePiece parses it
(train/data/sentencepiece_model.h: piece sizes and types, the normalizer, no self-test samples), because
SentencePiece trusts its models and a hostile one can crash it. Here only the cheap checks are made: the
checkpoint's format version, that /data names a known tokenizer kind, the model dataset's presence, dtype (uint8),
rank (1-D) and size (1 byte to 64 MiB, rpb's bound), a chars model's UTF-8 and order, and SentencePiece's piece
count once it has loaded. A SentencePiece model's fields are NOT checked before SentencePiece parses them: load
only checkpoints you trust, or run `rpb inspect` on the file first, which refuses any model rpb's reader does not
accept. Needs h5py; the sentencepiece kind needs python3-sentencepiece (scripts/deps.sh installs both).
"""
import h5py
import numpy as np

FORMAT_VERSION = 1  # train/checkpoint/checkpoint.cpp's kCheckpointFormatVersion
MAX_MODEL_BYTES = 64 << 20  # train/data/tokenizer.h kMaxTokenizerModelBytes
MAX_PIECES = 1 << 16  # train/data/sentencepiece_model.h: at most 65536 pieces (and kMaxCharsVocab characters)
ENCODE_LINE_BYTES = 1024  # train/data/tokenizer.h kEncodeLineBytes
ENCODE_MAX_PIECE_BYTES = 64 << 10  # train/data/tokenizer.h kEncodeMaxPieceBytes
SPACE_MARK = "\u2581"  # SentencePiece's escaped space, which its pieces hold for " "


def open_checkpoint(path):
    """The checkpoint at `path`, open for reading (h5py.File), its format version checked."""
    f = h5py.File(path, "r")
    version = int(f.attrs["format_version"])
    if version != FORMAT_VERSION:
        f.close()
        raise ValueError(f"{path}: format_version {version}, rpb_torch reads {FORMAT_VERSION}")
    return f


def piece_end(text, at):
    """Where the piece of the UTF-8 bytes `text` that starts at byte `at` ends: train/data/tokenizer.cpp's
    encode_piece_end (a line of at most ENCODE_LINE_BYTES with its newline; a longer one cut before its last space
    within them, else at the first space or newline further on, else at a character boundary)."""
    rest = len(text) - at
    newline = text.find(b"\n", at, at + min(rest, ENCODE_LINE_BYTES))
    if newline >= 0:
        return newline + 1
    if rest <= ENCODE_LINE_BYTES:
        return len(text)
    space = text.rfind(b" ", at, at + ENCODE_LINE_BYTES + 1)
    if space > at:
        return space
    end = at + min(rest, ENCODE_MAX_PIECE_BYTES)
    stops = [i for i in (text.find(b" ", at + ENCODE_LINE_BYTES, end), text.find(b"\n", at + ENCODE_LINE_BYTES, end))
             if i >= 0]
    if stops:
        return min(stops) + (1 if text[min(stops)] == 0x0A else 0)
    if rest <= ENCODE_MAX_PIECE_BYTES:
        return len(text)
    end = at + ENCODE_MAX_PIECE_BYTES
    while end > at + 1 and text[end] & 0xC0 == 0x80:
        end -= 1
    return end


class Tokenizer:
    """A stored tokenizer: `kind` ("bytes", "chars", "sentencepiece"), `vocab` (its number of ids), encode, decode
    and token_bytes (the bytes an id stands for; b"" for SentencePiece's <unk>)."""

    def __init__(self, kind, pieces, encode_piece):
        self.kind, self._bytes, self._encode_piece = kind, pieces, encode_piece
        self.vocab = len(pieces)

    def token_bytes(self, token):
        if not 0 <= token < self.vocab:
            raise ValueError(f"{self.kind} tokenizer: token {token} outside the vocabulary of {self.vocab}")
        return self._bytes[token]

    def encode(self, text):
        data = text.encode("utf-8")
        ids, at = [], 0
        while at < len(data):
            end = piece_end(data, at)
            piece = self._encode_piece(data[at:end].decode("utf-8"))
            if b"".join(self._bytes[i] for i in piece) != data[at:end]:
                raise ValueError(f"{self.kind} tokenizer: the pieces do not spell the text from byte {at} "
                                 "(a U+2581 in the text reads back as a space)")
            ids += piece
            at = end
        return ids

    def decode(self, ids):
        return b"".join(self.token_bytes(int(i)) for i in ids).decode("utf-8", errors="replace")


def _bytes_tokenizer():
    return Tokenizer("bytes", [bytes([b]) for b in range(256)], lambda text: list(text.encode("utf-8")))


def _chars_tokenizer(model, where):
    try:
        chars = list(model.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ValueError(f"{where}: invalid UTF-8 at byte {e.start} of a chars tokenizer's model") from None
    if len(chars) > MAX_PIECES or any(a >= b for a, b in zip(chars, chars[1:])):
        raise ValueError(f"{where}: a chars tokenizer's characters must be distinct, in increasing order, and at "
                         f"most {MAX_PIECES}")
    index = {c: i for i, c in enumerate(chars)}

    def encode(text):
        missing = next((c for c in text if c not in index), None)
        if missing is not None:
            raise ValueError(f"chars tokenizer: character U+{ord(missing):04X} is not in the vocabulary of "
                             f"{len(chars)} characters")
        return [index[c] for c in text]
    return Tokenizer("chars", [c.encode("utf-8") for c in chars], encode)


def _sentencepiece_tokenizer(model, where):
    try:
        import sentencepiece
    except ImportError:
        raise ImportError(f"{where}: a sentencepiece tokenizer needs Python's sentencepiece (Debian: "
                          "python3-sentencepiece; scripts/deps.sh installs it)") from None
    processor = sentencepiece.SentencePieceProcessor(model_proto=model)
    n = processor.GetPieceSize()
    if not 1 <= n <= MAX_PIECES:
        raise ValueError(f"{where}: {n} pieces; expected 1 to {MAX_PIECES}")
    pieces = []
    for i in range(n):
        piece = processor.IdToPiece(i)
        if processor.IsControl(i) or processor.IsUnknown(i):
            pieces.append(b"")
        elif processor.IsByte(i):  # "<0x0A>"
            pieces.append(bytes([int(piece[3:5], 16)]))
        else:
            pieces.append(piece.replace(SPACE_MARK, " ").encode("utf-8"))
    return Tokenizer("sentencepiece", pieces, lambda text: processor.encode(text, out_type=int))


LOADERS = {"chars": _chars_tokenizer, "sentencepiece": _sentencepiece_tokenizer}


def tokenizer(path):
    """The tokenizer checkpoint `path` stores (a text or passkey_text run's); ValueError naming what is wrong when
    the checkpoint has none, or one the cheap checks refuse (the module's docstring says which)."""
    with open_checkpoint(path) as f:
        data = f.get("data")
        if data is None or "tokenizer" not in data.attrs:
            raise ValueError(f"{path}: no stored tokenizer (/data's attribute tokenizer): not a checkpoint of a "
                             "text or passkey_text run")
        kind = data.attrs["tokenizer"]
        kind = kind.decode("utf-8") if isinstance(kind, bytes) else str(kind)
        dataset = data.get("tokenizer_model")
        where = f"{path}: /data/tokenizer_model"
        if kind == "bytes":
            if dataset is not None:
                raise ValueError(f"{where}: a bytes tokenizer has no model, found a dataset")
            return _bytes_tokenizer()
        if kind not in LOADERS:
            raise ValueError(f"{path}: /data names a tokenizer {kind[:40]!r}; rpb_torch reads bytes, chars and "
                             "sentencepiece ones")
        if not isinstance(dataset, h5py.Dataset):
            raise ValueError(f"{where} is missing: a {kind} tokenizer is stored with its model")
        if dataset.dtype != np.uint8 or dataset.ndim != 1 or not 1 <= dataset.shape[0] <= MAX_MODEL_BYTES:
            raise ValueError(f"{where}: expected 1 to {MAX_MODEL_BYTES} bytes (uint8), found shape {dataset.shape} "
                             f"{dataset.dtype}")
        model = dataset[()].tobytes()
    return LOADERS[kind](model, where)
