"""The workload networks, written here (no downloads): DDPM UNet, latent-diffusion SR
(autoencoder + cross-attention UNet), DiT (image and trajectory), ResNet-50."""
