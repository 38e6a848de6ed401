"""The embedded group protocol of sparkherd workers: pure values and codecs, no I/O."""
