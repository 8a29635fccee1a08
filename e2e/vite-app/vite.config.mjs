// Both pages of the app: the Player (index.html) and the site players' integrations
// (players.html, which bundles hls.js, Shaka Player and Video.js: large on purpose).
export default {
  build: {
    chunkSizeWarningLimit: 4096,
    rollupOptions: {
      input: { main: 'index.html', players: 'players.html' },
    },
  },
};
