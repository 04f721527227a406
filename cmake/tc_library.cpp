// libtc.so is assembled from the static parts (compiler, trace, store,
// collect); this file only gives the target a source of its own.
