"""The speech front end, the Python twin of src/attnlab/audio (docs/speech.md):

    wav       WAV bytes -> float32 mono samples in [-1, 1] and the sample rate
    resample  any rate in 8..48 kHz -> 16 kHz (Kaiser-windowed sinc)
    features  16 kHz samples -> Sphinx-compatible MFCCs (as AN4's .mfc files), the 40-band log-mel spectrogram,
              cepstral mean normalisation, and the reader for Sphinx .mfc files
"""
