// Anchors the precompiled LibTorch header shared by every torch target.
