-- A flag or an abandonment scores a game at once (the round moves on); the play site's GameFinished
-- is the final word and replaces it when it differs. The replaced decision is kept for audit.
ALTER TABLE games ADD COLUMN overruled text;
